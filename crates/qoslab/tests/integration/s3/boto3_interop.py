"""boto3 against qoslab's S3 endpoint: the API calls a real application makes, and the
bad input a hostile or broken one sends. Run by the Rust integration test s3_interop;
exits non-zero with a message on the first failed check.

Environment: S3_ENDPOINT (http://host:port), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
BUCKET_DIR (the node's DATA_DIR/buckets, to check nothing lands outside a bucket).
"""

import hashlib
import http.client
import io
import os
import socket
import sys
import urllib.parse

import boto3
import botocore
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from boto3.s3.transfer import TransferConfig

EP = os.environ["S3_ENDPOINT"]
AK = os.environ["AWS_ACCESS_KEY_ID"]
SK = os.environ["AWS_SECRET_ACCESS_KEY"]
BUCKET_DIR = os.environ["BUCKET_DIR"]

cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
s3 = boto3.client("s3", endpoint_url=EP, region_name="us-east-1", config=cfg)


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def error_code(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    fail(f"{fn.__name__} succeeded, an error was expected")


def signed(method, path, body=b"", headers=None, payload_hash=None):
    """A SigV4-signed raw request: (status, body bytes)."""
    url = EP + path
    h = dict(headers or {})
    h["x-amz-content-sha256"] = payload_hash or hashlib.sha256(body).hexdigest()
    req = AWSRequest(method=method, url=url, data=body, headers=h)
    creds = botocore.credentials.Credentials(AK, SK)
    SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request(method, u.path + (("?" + u.query) if u.query else ""), body=body,
              headers=dict(req.headers.items()))
    r = c.getresponse()
    return r.status, r.read()


# --- buckets ---
s3.create_bucket(Bucket="interop-a")
s3.create_bucket(Bucket="interop-b")
names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
check({"interop-a", "interop-b"} <= set(names), f"list_buckets: {names}")
check(error_code(s3.create_bucket, Bucket="interop-a") in
      ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"), "duplicate bucket")
check(error_code(s3.head_object, Bucket="no-such-bucket", Key="k") in ("404", "NoSuchBucket"),
      "HEAD in a missing bucket")
check(error_code(s3.get_object, Bucket="no-such-bucket", Key="k") == "NoSuchBucket",
      "GET in a missing bucket")
check(error_code(s3.create_bucket, Bucket="Bad_Name") == "InvalidBucketName", "bad bucket name")

# --- a 64 MiB multipart upload, ranged GETs ---
data = os.urandom(64 << 20)
tc = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20, max_concurrency=4)
s3.upload_fileobj(io.BytesIO(data), "interop-a", "dir/big.bin", Config=tc)
head = s3.head_object(Bucket="interop-a", Key="dir/big.bin")
check(head["ContentLength"] == len(data), f"size {head['ContentLength']}")
check(head["ETag"].strip('"').endswith("-8"), f"multipart ETag {head['ETag']}")
for lo, hi in [(0, 0), (12345, 8 << 20), ((64 << 20) - 100, (64 << 20) - 1)]:
    got = s3.get_object(Bucket="interop-a", Key="dir/big.bin", Range=f"bytes={lo}-{hi}")
    check(got["ContentRange"] == f"bytes {lo}-{hi}/{len(data)}", got["ContentRange"])
    check(got["Body"].read() == data[lo:hi + 1], f"range {lo}-{hi}")
got = s3.get_object(Bucket="interop-a", Key="dir/big.bin", Range="bytes=-10")
check(got["Body"].read() == data[-10:], "suffix range")
check(error_code(s3.get_object, Bucket="interop-a", Key="dir/big.bin",
                 Range=f"bytes={len(data)}-") == "InvalidRange", "unsatisfiable range")
buf = io.BytesIO()
s3.download_fileobj("interop-a", "dir/big.bin", buf, Config=tc)
check(hashlib.md5(buf.getvalue()).digest() == hashlib.md5(data).digest(), "full download")

# --- small objects, metadata, checksums, odd keys ---
body = b"hello qoslab"
put = s3.put_object(Bucket="interop-a", Key="small.txt", Body=body, ContentType="text/plain",
                    Metadata={"owner": "tests"}, ChecksumAlgorithm="CRC32")
check(put["ETag"].strip('"') == hashlib.md5(body).hexdigest(), f"ETag {put['ETag']}")
g = s3.get_object(Bucket="interop-a", Key="small.txt")
check(g["Body"].read() == body and g["ContentType"] == "text/plain"
      and g["Metadata"] == {"owner": "tests"}, f"small object {g}")
odd = ["../../escape", "a/../b", "sp ace+plus%pct", "ünï/cødé", "x" * 1024, "trailing/"]
for k in odd:
    s3.put_object(Bucket="interop-a", Key=k, Body=k.encode())
    check(s3.get_object(Bucket="interop-a", Key=k)["Body"].read() == k.encode(), f"key {k!r}")
check(error_code(s3.put_object, Bucket="interop-a", Key="y" * 1025, Body=b"") in
      ("KeyTooLongError",), "1025-byte key")
# Nothing outside the buckets' own directories.
for root, _dirs, files in os.walk(BUCKET_DIR):
    rel = os.path.relpath(root, BUCKET_DIR).split(os.sep)
    check(rel[0] in (".", "interop-a", "interop-b"), f"unexpected directory {root}")
    check(len(rel) < 2 or rel[1] in ("objects", "tmp", "uploads"), f"unexpected path {root}")
check(not os.path.exists(os.path.join(os.path.dirname(BUCKET_DIR), "escape")), "escaped key")
# Content-MD5 that does not match: BadDigest, nothing stored.
status, resp = signed("PUT", "/interop-a/baddigest", b"abc",
                      {"Content-MD5": "1B2M2Y8AsgTpgAmY7PhCfg=="})
check(status == 400 and b"BadDigest" in resp, f"bad Content-MD5: {status} {resp[:200]}")
check(error_code(s3.head_object, Bucket="interop-a", Key="baddigest") == "404", "BadDigest stored")

# --- listing: delimiter, prefixes, continuation ---
for i in range(5):
    s3.put_object(Bucket="interop-b", Key=f"logs/2026/{i}", Body=b"x")
s3.put_object(Bucket="interop-b", Key="logs/top", Body=b"x")
s3.put_object(Bucket="interop-b", Key="readme", Body=b"x")
r = s3.list_objects_v2(Bucket="interop-b", Delimiter="/")
check([c["Prefix"] for c in r.get("CommonPrefixes", [])] == ["logs/"], f"prefixes {r}")
check([o["Key"] for o in r.get("Contents", [])] == ["readme"], f"keys {r}")
r = s3.list_objects_v2(Bucket="interop-b", Prefix="logs/", Delimiter="/")
check([c["Prefix"] for c in r["CommonPrefixes"]] == ["logs/2026/"]
      and [o["Key"] for o in r["Contents"]] == ["logs/top"], f"under logs/: {r}")
keys, token = [], None
while True:
    kw = {"ContinuationToken": token} if token else {}
    r = s3.list_objects_v2(Bucket="interop-b", MaxKeys=2, **kw)
    keys += [o["Key"] for o in r.get("Contents", [])]
    if not r["IsTruncated"]:
        break
    token = r["NextContinuationToken"]
check(keys == sorted(keys) and len(keys) == 7, f"paged listing {keys}")
pages = s3.get_paginator("list_objects").paginate(Bucket="interop-b", PaginationConfig={"PageSize": 3})
v1 = [o["Key"] for p in pages for o in p.get("Contents", [])]
check(v1 == keys, f"v1 listing {v1}")
r = s3.list_objects_v2(Bucket="interop-a", Prefix="sp ace")
check([o["Key"] for o in r["Contents"]] == ["sp ace+plus%pct"], f"url-encoded listing {r}")
check(error_code(s3.list_objects_v2, Bucket="interop-b", ContinuationToken="zz") == "InvalidArgument",
      "bad continuation token")

# --- multi-delete, bucket not empty ---
check(error_code(s3.delete_bucket, Bucket="interop-b") == "BucketNotEmpty", "delete non-empty")
d = s3.delete_objects(Bucket="interop-b", Delete={"Objects": [{"Key": k} for k in keys]})
check(len(d["Deleted"]) == 7 and not d.get("Errors"), f"multi-delete {d}")
check(s3.list_objects_v2(Bucket="interop-b")["KeyCount"] == 0, "bucket emptied")

# --- malformed and hostile requests ---
status, resp = signed("POST", "/interop-b?delete", b"<Delete><Object><Key>x</Key>",
                      {"Content-MD5": "", "Content-Type": "application/xml"})
check(status == 400 and (b"MalformedXML" in resp or b"InvalidDigest" in resp), f"bad XML: {status} {resp[:300]}")
status, resp = signed("POST", "/interop-b?delete", b"<Delete><Object><Key>x</Key></Object",
                      {"Content-Type": "application/xml"})
check(status == 400 and b"MalformedXML" in resp, f"truncated XML: {status} {resp[:300]}")
# A PUT announcing more than the limit is refused before any byte is read.
u = urllib.parse.urlsplit(EP)
req = AWSRequest(method="PUT", url=EP + "/interop-b/huge", data=b"",
                 headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
SigV4Auth(botocore.credentials.Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
sock = socket.create_connection((u.hostname, u.port), timeout=30)
hdrs = "".join(f"{k}: {v}\r\n" for k, v in req.headers.items())
sock.sendall(f"PUT /interop-b/huge HTTP/1.1\r\nHost: {u.netloc}\r\n{hdrs}Content-Length: {6 << 30}\r\n\r\n".encode())
reply = sock.recv(4096)
sock.close()
check(b" 400 " in reply.split(b"\r\n")[0] and b"EntityTooLarge" in reply, f"oversized PUT: {reply[:300]}")
# A body cut short: the connection closes mid-PUT; nothing is stored.
req = AWSRequest(method="PUT", url=EP + "/interop-b/truncated", data=b"",
                 headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
SigV4Auth(botocore.credentials.Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
sock = socket.create_connection((u.hostname, u.port), timeout=30)
hdrs = "".join(f"{k}: {v}\r\n" for k, v in req.headers.items())
sock.sendall(f"PUT /interop-b/truncated HTTP/1.1\r\nHost: {u.netloc}\r\n{hdrs}Content-Length: 100000\r\n\r\n".encode() + b"z" * 1000)
sock.shutdown(socket.SHUT_WR)
sock.recv(4096)
sock.close()
check(error_code(s3.head_object, Bucket="interop-b", Key="truncated") == "404", "truncated PUT stored")
# A signed payload whose SHA-256 does not match: refused, nothing stored.
status, resp = signed("PUT", "/interop-b/tampered", b"real body",
                      payload_hash=hashlib.sha256(b"other body").hexdigest())
check(status == 400, f"payload hash mismatch: {status} {resp[:300]}")
check(error_code(s3.head_object, Bucket="interop-b", Key="tampered") == "404", "tampered PUT stored")

# --- the wrong secret ---
bad = boto3.client("s3", endpoint_url=EP, region_name="us-east-1", config=cfg,
                   aws_access_key_id=AK, aws_secret_access_key=SK[:-1] + ("x" if SK[-1] != "x" else "y"))
check(error_code(bad.list_objects_v2, Bucket="interop-a") == "SignatureDoesNotMatch", "wrong secret")
check(error_code(bad.put_object, Bucket="interop-b", Key="k", Body=b"x") == "SignatureDoesNotMatch",
      "wrong secret on PUT")
unknown = boto3.client("s3", endpoint_url=EP, region_name="us-east-1", config=cfg,
                       aws_access_key_id="AKIANOSUCHKEY0000000", aws_secret_access_key=SK)
check(error_code(unknown.list_buckets) == "InvalidAccessKeyId", "unknown access key")
check(error_code(s3.head_object, Bucket="interop-b", Key="k") == "404", "stored by a bad signature")

# --- clean up ---
mpu = s3.create_multipart_upload(Bucket="interop-b", Key="abandoned")
check(error_code(s3.delete_bucket, Bucket="interop-b") == "BucketNotEmpty", "upload in progress")
up = s3.list_multipart_uploads(Bucket="interop-b")
check([u["Key"] for u in up.get("Uploads", [])] == ["abandoned"], f"uploads {up}")
s3.abort_multipart_upload(Bucket="interop-b", Key="abandoned", UploadId=mpu["UploadId"])
s3.delete_bucket(Bucket="interop-b")
check("interop-b" not in [b["Name"] for b in s3.list_buckets()["Buckets"]], "bucket deleted")
print("boto3 interop: ok")
