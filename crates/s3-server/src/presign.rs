//! Presigned URLs: AWS refuses an `X-Amz-Expires` above 604,800 s (7 days) with 400
//! `AuthorizationQueryParametersError`; s3s checks the signature and whether the URL has
//! expired, not the bound, so the endpoint checks it before s3s sees the request.

/// The longest validity AWS accepts for a presigned URL (SigV4), in seconds.
pub const MAX_EXPIRES: u64 = 604_800;

/// The refusal's message for a query string, or `None` when it passes.
pub fn refusal(query: Option<&str>) -> Option<String> {
    let q = query?;
    let v = q
        .split('&')
        .find_map(|p| p.strip_prefix("X-Amz-Expires="))?;
    Some(match v.parse::<i64>() {
        Ok(n) if n < 0 => "X-Amz-Expires must be non-negative".to_string(),
        Ok(n) if n as u64 > MAX_EXPIRES => {
            format!("X-Amz-Expires must be less than a week (in seconds) that is {MAX_EXPIRES}")
        }
        Ok(_) => return None,
        Err(_) => "X-Amz-Expires should be a number".to_string(),
    })
}

/// The S3 error response for a refusal (AWS's code and status).
pub fn response(message: &str) -> hyper::Response<s3s::Body> {
    let esc = message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AuthorizationQueryParametersError</Code>\
         <Message>{esc}</Message></Error>"
    );
    let mut r = hyper::Response::new(s3s::Body::from(xml));
    *r.status_mut() = hyper::StatusCode::BAD_REQUEST;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/xml"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_bounds() {
        assert_eq!(refusal(None), None);
        assert_eq!(refusal(Some("list-type=2")), None);
        assert_eq!(
            refusal(Some(
                "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=604800"
            )),
            None
        );
        assert!(refusal(Some("X-Amz-Expires=604801"))
            .unwrap()
            .contains("604800"));
        assert!(refusal(Some("a=b&X-Amz-Expires=-1"))
            .unwrap()
            .contains("non-negative"));
        assert!(refusal(Some("X-Amz-Expires=1e9"))
            .unwrap()
            .contains("number"));
    }
}
