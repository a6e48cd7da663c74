#![cfg(feature = "e2e")]
//! Integration tests of `qoslab serve`: the real binary, real NBD clients (fio, nbdinfo,
//! qemu-img, nbdcopy) and raw protocol bytes. One test binary, like ripgrep's.
//!
//! External tools are required, never optional: a missing tool fails the test with a
//! message pointing at the project's test script, which installs them.

mod api_cli;
mod api_contract;
mod api_crash;
mod api_hardening;
mod api_live;
mod api_schema;
mod api_util;
mod array;
mod auth_closed;
mod bench_client_server;
mod bench_interrupted;
mod bench_iscsi;
mod bench_nfs;
mod bench_node;
mod bench_plan;
mod bench_safety;
mod bench_targets;
mod bench_util;
mod burst;
mod client;
mod clustershell;
mod data_privacy;
mod data_safety;
mod diagnosis;
mod first_hour;
mod hostile;
mod interop;
mod iscsi;
mod iscsi_kernel;
mod iscsi_node;
mod isolation;
mod json;
mod lifecycle;
mod listener_caps;
mod nbd_tls;
mod nfs;
mod nfs_hostile;
mod nfs_kernel;
mod nfs_matrix;
mod nfs_node;
mod nfs_peer;
mod nfs_policy_cli;
mod nfs_util;
mod ontap_rest;
mod protocol;
mod provisioned;
mod provisioned_nas;
mod qos;
mod ramp;
mod realtime;
mod report;
mod s3_api;
mod s3_crash;
mod s3_hosts;
mod s3_interop;
mod s3_qos;
mod s3_util;
mod san_config;
mod san_rest;
mod signals;
mod small_fs;
mod suites;
mod suites_nfs;
mod suites_nfs_kernel;
mod tenants;
mod tenants_apps;
mod tenants_apps_targets;
mod tenants_sweep;
mod tenants_targets;
mod tenants_util;
mod util;
