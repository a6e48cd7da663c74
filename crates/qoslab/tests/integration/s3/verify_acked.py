"""Every object in ACK_LOG reads back with its size, MD5 and ETag (after a crash and a
restart). Prints the count."""

import hashlib
import os
import sys

import boto3
from botocore.config import Config

EP = os.environ["S3_ENDPOINT"]
cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
s3 = boto3.client("s3", endpoint_url=EP, region_name="us-east-1", config=cfg)
n = 0
for line in open(os.environ["ACK_LOG"]):
    key, size, md5 = line.split()
    o = s3.get_object(Bucket=os.environ["BUCKET"], Key=key)
    body = o["Body"].read()
    if len(body) != int(size) or hashlib.md5(body).hexdigest() != md5 or o["ETag"].strip('"') != md5:
        print(f"{key}: got {len(body)} bytes, MD5 {hashlib.md5(body).hexdigest()}, ETag {o['ETag']}; "
              f"acknowledged {size} bytes, MD5 {md5}", file=sys.stderr)
        sys.exit(1)
    n += 1
print(n)
