//! Presigned URLs: AWS refuses an `X-Amz-Expires` above 604,800 s (7 days) with 400
//! `AuthorizationQueryParametersError`; s3s checks the signature and whether the URL has
//! expired, not the bound, so the endpoint checks it before s3s sees the request. A SigV2
//! presigned URL (`AWSAccessKeyId`, `Expires`, `Signature`) names the moment it expires
//! instead of a validity: it gets the same cap, counted from now, so no URL a node signed
//! (or accepts) stays valid for more than 7 days.

/// The longest validity AWS accepts for a presigned URL (SigV4), in seconds.
pub const MAX_EXPIRES: u64 = 604_800;

/// The refusal's message for a query string at `now` (seconds since the epoch), or `None`
/// when it passes.
pub fn refusal(query: Option<&str>, now: u64) -> Option<String> {
    let q = query?;
    let param = |name: &str| {
        q.split('&')
            .find_map(|p| p.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
    };
    if param("Signature").is_some() && param("AWSAccessKeyId").is_some() {
        let v = param("Expires")?;
        return Some(match v.parse::<u64>() {
            Ok(at) if at > now.saturating_add(MAX_EXPIRES) => format!(
                "Expires must be at most a week (in seconds) that is {MAX_EXPIRES} from now: \
                 a SigV2 presigned URL gets the same cap as a SigV4 one"
            ),
            Ok(_) => return None,
            Err(_) => "Expires should be a number of seconds since the epoch".to_string(),
        });
    }
    let v = param("X-Amz-Expires")?;
    Some(match v.parse::<i64>() {
        Ok(n) if n < 0 => "X-Amz-Expires must be non-negative".to_string(),
        Ok(n) if n as u64 > MAX_EXPIRES => {
            format!("X-Amz-Expires must be less than a week (in seconds) that is {MAX_EXPIRES}")
        }
        Ok(_) => return None,
        Err(_) => "X-Amz-Expires should be a number".to_string(),
    })
}

/// SigV4 dates the request carries (the `X-Amz-Date` header and query parameter, the
/// date of an `Authorization` or `X-Amz-Credential` credential) that are not all digits
/// where digits belong. s3s 0.14 parses them with `c - b'0'` evaluated before its digit
/// check, which overflows (a panic with overflow checks) for bytes below `'0'`: found by
/// the `s3_request` fuzz target. Such a request is refused here, before s3s sees it.
pub fn malformed_date<B>(req: &hyper::Request<B>) -> Option<String> {
    let digits = |s: &[u8]| s.iter().all(|b| b.is_ascii_digit());
    // YYYYMMDD'T'HHMMSS'Z', checked as bytes (a non-ASCII character is simply wrong).
    let amz_date_ok = |v: &str| {
        let b = v.as_bytes();
        b.len() == 16 && digits(&b[..8]) && b[8] == b'T' && digits(&b[9..15]) && b[15] == b'Z'
    };
    // ACCESS/YYYYMMDD/REGION/SERVICE/aws4_request, as s3s reads it: the access key is
    // everything up to the first '/' (spaces and commas included), the date the next 8
    // characters (fewer than 8 and s3s refuses it itself).
    let credential_ok = |c: &str| match c.split_once('/') {
        Some((_, rest)) => {
            let date: String = rest.chars().take(8).collect();
            date.chars().count() < 8 || digits(date.as_bytes())
        }
        None => true,
    };
    // As s3s reads them: any UTF-8, not only visible ASCII.
    let h = |n: &str| {
        req.headers()
            .get(n)
            .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
    };
    if let Some(d) = h("x-amz-date") {
        if !amz_date_ok(d.trim()) {
            return Some(format!("X-Amz-Date {:?} is not YYYYMMDDTHHMMSSZ", esc(d)));
        }
    }
    if let Some(a) = h("authorization") {
        // Every "Credential=" (wherever s3s may start reading one), to the header's end.
        for c in a.split("Credential=").skip(1) {
            if !credential_ok(c) {
                let c = c.split([',', ' ']).next().unwrap_or("");
                return Some(format!("the credential {:?} has no YYYYMMDD date", esc(c)));
            }
        }
    }
    for p in req.uri().query().unwrap_or("").split('&') {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        let v = percent_decode(v);
        if k == "X-Amz-Date" && !amz_date_ok(&v) {
            return Some(format!("X-Amz-Date {:?} is not YYYYMMDDTHHMMSSZ", esc(&v)));
        }
        if k == "X-Amz-Credential" && !credential_ok(&v) {
            return Some(format!(
                "X-Amz-Credential {:?} has no YYYYMMDD date",
                esc(&v)
            ));
        }
    }
    None
}

fn esc(s: &str) -> String {
    s.chars().take(64).flat_map(char::escape_default).collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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
        let refusal = |q| refusal(q, 1_700_000_000);
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

    #[test]
    fn sigv2_urls_get_the_same_seven_days() {
        let now = 1_700_000_000u64;
        let v2 = |expires: &str| format!("AWSAccessKeyId=AKID&Expires={expires}&Signature=abc%3D");
        assert_eq!(refusal(Some(&v2(&(now + 604_800).to_string())), now), None);
        assert_eq!(
            refusal(Some(&v2(&(now - 10).to_string())), now),
            None,
            "expired: s3s says so"
        );
        // The case: ten years.
        let e = refusal(Some(&v2(&(now + 10 * 365 * 86_400).to_string())), now).unwrap();
        assert!(e.contains("at most a week") && e.contains("604800"), "{e}");
        assert!(refusal(Some(&v2(&(now + 604_801).to_string())), now).is_some());
        assert!(refusal(Some(&v2("soon")), now).unwrap().contains("number"));
        // An `Expires` that is not SigV2 query authentication is not ours to judge.
        assert_eq!(refusal(Some("Expires=99999999999"), now), None);
    }

    #[test]
    fn dates_s3s_would_panic_on_are_refused() {
        let req = |uri: &str, hdrs: &[(&str, &str)]| {
            let mut b = hyper::Request::builder().uri(uri);
            for (k, v) in hdrs {
                b = b.header(*k, *v);
            }
            b.body(()).unwrap()
        };
        let ok = "AWS4-HMAC-SHA256 Credential=AKIA/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00";
        let good = req(
            "/b/k",
            &[("authorization", ok), ("x-amz-date", "20250101T000000Z")],
        );
        assert_eq!(malformed_date(&good), None);
        // The fuzzer's inputs: a space and a '.' in the credential's date.
        for bad in [
            "AWS4-HMAC-SHA256 Credential=AKIA/2 250101/us-east-1/s3/aws4_request, Signature=00",
            "AWS4-HMAC-SHA256 Credential=AKIA/20.50101/us-east-1/s3/aws4_request",
            // ...and s3s's access key runs to the first '/', spaces and commas included.
            "A-4WSHMAC-SHA256 Credential=AK STREZFU#ZFUZZ/21.50101/us-east-1/s3/aws4_request",
            "AWS4-HMAC-SHA256 Credential=,KIAFUZZ/20.50101/us-east-1/s3/aws4_request",
            "AWS4-HMAC-SHA256 Credential=AKIA Credential=AKIA/2025010x/x",
        ] {
            assert!(malformed_date(&req("/b/k", &[("authorization", bad)])).is_some());
        }
        assert!(malformed_date(&req("/b/k", &[("x-amz-date", "2025-101T000000Z")])).is_some());
        // The fuzzer's next input: a multi-byte character inside the 16 bytes.
        let r = req("/b/k?X-Amz-Date=20250101T00000%D0%9F", &[]);
        assert!(malformed_date(&r).is_some());
        assert!(malformed_date(&req("/b/k?X-Amz-Date=2025%2F101T000000Z", &[])).is_some());
        let q = "/b/k?X-Amz-Credential=AKIA%2F2025%2E101%2Fus-east-1%2Fs3%2Faws4_request";
        assert!(malformed_date(&req(q, &[])).is_some());
        let q = "/b/k?X-Amz-Credential=AKIA%2F20250101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250101T000000Z";
        assert_eq!(malformed_date(&req(q, &[])), None);
    }
}
