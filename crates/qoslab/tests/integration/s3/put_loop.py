"""PUT objects in a loop until the node dies; after each acknowledged PUT append
`KEY SIZE MD5` to ACK_LOG (flushed and fsynced before the next PUT). Run by the Rust
integration test s3_crash, which kill -9s the node mid-loop and then checks every
acknowledged object. Exits 0 when the node goes away (that is the point)."""

import hashlib
import os
import random
import sys

import boto3
from botocore.config import Config

EP = os.environ["S3_ENDPOINT"]
LOG = os.environ["ACK_LOG"]
BUCKET = os.environ["BUCKET"]
cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
             connect_timeout=5, read_timeout=30)
s3 = boto3.client("s3", endpoint_url=EP, region_name="us-east-1", config=cfg)
rng = random.Random(int(os.environ.get("SEED", "1")))
with open(LOG, "a") as log:
    i = 0
    while True:
        size = rng.choice([0, 1, 4096, 65536 + 7, 1 << 20, (3 << 20) + 11])
        data = rng.randbytes(size)
        key = f"round{os.environ.get('SEED', '1')}/{i:06d}"
        try:
            r = s3.put_object(Bucket=BUCKET, Key=key, Body=data)
        except Exception as e:  # the node was killed
            print(f"stopped after {i} acknowledged PUTs: {type(e).__name__}", file=sys.stderr)
            sys.exit(0)
        md5 = hashlib.md5(data).hexdigest()
        if r["ETag"].strip('"') != md5:
            print(f"ETag {r['ETag']} != MD5 {md5} for {key}", file=sys.stderr)
            sys.exit(1)
        log.write(f"{key} {size} {md5}\n")
        log.flush()
        os.fsync(log.fileno())
        i += 1
