"""Presigned GETs with X-Amz-Expires at AWS's bound (604800 s: served) and one past it
(refused with 400 AuthorizationQueryParametersError, as AWS does). botocore signs any
ExpiresIn; the server must do the refusing. SigV2 presigned URLs (`Expires` is a moment,
not a validity) get the same 7-day cap (issue 31: ten years were accepted)."""
import os
import urllib.error
import urllib.request

import boto3
from botocore.config import Config


def client(signature_version):
    return boto3.client(
        "s3",
        endpoint_url=os.environ["S3_ENDPOINT"],
        config=Config(
            signature_version=signature_version, s3={"addressing_style": "path"}
        ),
    )


s3 = client("s3v4")
s3v2 = client("s3")
s3.create_bucket(Bucket="presign")
s3.put_object(Bucket="presign", Key="k", Body=b"hello")


def get(c, expires, is_signed_so):
    """GET through a URL `c` presigns for `expires` s; `is_signed_so(url, expires)` checks
    the URL is signed as meant."""
    url = c.generate_presigned_url(
        "get_object", Params={"Bucket": "presign", "Key": "k"}, ExpiresIn=expires
    )
    assert is_signed_so(url, expires), url
    try:
        with urllib.request.urlopen(url) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def served_then_refused(c, served, refused, is_signed_so):
    status, body = get(c, served, is_signed_so)
    assert status == 200 and body == "hello", (status, body)
    status, body = get(c, refused, is_signed_so)
    assert status == 400, (status, body)
    assert "<Code>AuthorizationQueryParametersError</Code>" in body, body
    assert "604800" in body, body


served_then_refused(s3, 604800, 604801, lambda u, e: f"X-Amz-Expires={e}" in u)
# SigV2: a day is served (the URL is a SigV2 one the server checks); ten years are refused.
served_then_refused(
    s3v2,
    86400,
    10 * 365 * 86400,
    lambda u, _: "Signature=" in u and "Expires=" in u and "X-Amz" not in u,
)
print("ok")
