"""Presigned GETs with X-Amz-Expires at AWS's bound (604800 s: served) and one past it
(refused with 400 AuthorizationQueryParametersError, as AWS does). botocore signs any
ExpiresIn; the server must do the refusing. SigV2 presigned URLs (`Expires` is a moment,
not a validity) get the same 7-day cap (issue 31: ten years were accepted)."""
import os
import urllib.error
import urllib.request

import boto3
from botocore.config import Config

s3 = boto3.client(
    "s3",
    endpoint_url=os.environ["S3_ENDPOINT"],
    config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
)
s3.create_bucket(Bucket="presign")
s3.put_object(Bucket="presign", Key="k", Body=b"hello")


def get(expires):
    url = s3.generate_presigned_url(
        "get_object", Params={"Bucket": "presign", "Key": "k"}, ExpiresIn=expires
    )
    assert f"X-Amz-Expires={expires}" in url, url
    try:
        with urllib.request.urlopen(url) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


status, body = get(604800)
assert status == 200 and body == "hello", (status, body)
status, body = get(604801)
assert status == 400, (status, body)
assert "<Code>AuthorizationQueryParametersError</Code>" in body, body
assert "604800" in body, body
s3v2 = boto3.client(
    "s3",
    endpoint_url=os.environ["S3_ENDPOINT"],
    config=Config(signature_version="s3", s3={"addressing_style": "path"}),
)


def get_v2(expires):
    url = s3v2.generate_presigned_url(
        "get_object", Params={"Bucket": "presign", "Key": "k"}, ExpiresIn=expires
    )
    assert "Signature=" in url and "Expires=" in url and "X-Amz" not in url, url
    try:
        with urllib.request.urlopen(url) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


# A day is served (the URL is a SigV2 one the server checks); ten years are refused.
status, body = get_v2(86400)
assert status == 200 and body == "hello", (status, body)
status, body = get_v2(10 * 365 * 86400)
assert status == 400, (status, body)
assert "<Code>AuthorizationQueryParametersError</Code>" in body, body
assert "604800" in body, body
print("ok")
