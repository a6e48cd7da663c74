//! The node's TLS identity, shared by the REST API (HTTPS) and NBD (STARTTLS).
//!
//! Unless a certificate is given, the first start generates one in `DATA_DIR/tls/` in the
//! GnuTLS X.509 directory layout that nbdkit, qemu (`tls-creds-x509,dir=`) and libnbd
//! (`tls-certificates=`) use: `ca-cert.pem` (a CA made for this node only), and
//! `server-cert.pem` / `server-key.pem` (signed by it, for `localhost`, the loopback
//! addresses, the host name and the listening addresses). The CA's private key is not
//! kept: nothing else can be signed by it. Clients trust `ca-cert.pem`.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use storage_node::front_end::{ByteStream, TlsAccept, TlsAcceptor};

/// Where a TLS identity's files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The CA that signed `cert`, for clients (a generated identity always has one).
    pub ca: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {detail}")]
    Pem { path: String, detail: String },
    #[error("generating the node's certificate: {0}")]
    Generate(String),
    #[error("TLS configuration: {0}")]
    Config(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError + '_ {
    move |source| TlsError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The directory of a data dir's generated identity.
pub fn tls_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("tls")
}

/// The generated identity in `DATA_DIR/tls`, created on first use. `names`: extra DNS
/// names or IP addresses the certificate must be valid for (listening addresses).
pub fn ensure_generated(data_dir: &Path, names: &[String]) -> Result<TlsFiles, TlsError> {
    let dir = tls_dir(data_dir);
    let files = TlsFiles {
        cert: dir.join("server-cert.pem"),
        key: dir.join("server-key.pem"),
        ca: Some(dir.join("ca-cert.pem")),
    };
    if files.cert.exists() && files.key.exists() {
        return Ok(files);
    }
    crate::private::create_dir_all(&dir).map_err(io(&dir))?;
    let (ca_pem, cert_pem, key_pem) = generate(names)?;
    if let Some(ca) = &files.ca {
        write_file(ca, &ca_pem, 0o600)?;
    }
    write_file(&files.key, &key_pem, 0o600)?;
    write_file(&files.cert, &cert_pem, 0o600)?;
    tracing::info!(
        "generated a TLS certificate in {} (clients trust ca-cert.pem there)",
        dir.display()
    );
    Ok(files)
}

fn write_file(path: &Path, text: &str, mode: u32) -> Result<(), TlsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(io(&tmp))?;
    f.write_all(text.as_bytes()).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// The names a generated certificate covers: localhost, loopback, the host name, `extra`.
fn subject_names(extra: &[String]) -> Vec<String> {
    let mut names = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let h = h.trim();
        if !h.is_empty() && h.parse::<IpAddr>().is_err() {
            names.push(h.to_string());
        }
    }
    for n in extra {
        let unspecified = n.parse::<IpAddr>().is_ok_and(|ip| ip.is_unspecified());
        if !unspecified && !names.contains(n) {
            names.push(n.clone());
        }
    }
    names
}

/// A CA and a server certificate signed by it: (ca PEM, cert PEM, key PEM).
fn generate(extra: &[String]) -> Result<(String, String, String), TlsError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let g = |e: rcgen::Error| TlsError::Generate(e.to_string());
    let year = 1970
        + (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs()
            / 31_556_952) as i32;
    let validity = |p: &mut CertificateParams| {
        p.not_before = rcgen::date_time_ymd(year - 1, 1, 1);
        p.not_after = rcgen::date_time_ymd(year + 10, 1, 1);
    };
    let ca_key = KeyPair::generate().map_err(g)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(g)?;
    ca.distinguished_name = rcgen::DistinguishedName::new();
    ca.distinguished_name
        .push(DnType::CommonName, "qoslab node CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    validity(&mut ca);
    let ca_cert = ca.self_signed(&ca_key).map_err(g)?;
    let issuer = Issuer::new(ca, ca_key);

    let key = KeyPair::generate().map_err(g)?;
    let names = subject_names(extra);
    let mut p = CertificateParams::new(names).map_err(g)?;
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(DnType::CommonName, "localhost");
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    p.use_authority_key_identifier_extension = true;
    validity(&mut p);
    let cert = p.signed_by(&key, &issuer).map_err(g)?;
    Ok((ca_cert.pem(), cert.pem(), key.serialize_pem()))
}

/// Read a PEM certificate chain.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Result<Vec<_>, _> = CertificateDer::pem_file_iter(path)
        .map_err(|e| TlsError::Pem {
            path: path.display().to_string(),
            detail: e.to_string(),
        })?
        .collect();
    let certs = certs.map_err(|e| TlsError::Pem {
        path: path.display().to_string(),
        detail: e.to_string(),
    })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: path.display().to_string(),
            detail: "no CERTIFICATE in the file".into(),
        });
    }
    Ok(certs)
}

/// A server configuration for the identity (ring provider, TLS 1.2 and 1.3, no client
/// certificates). `alpn`: protocols to offer (HTTP: `http/1.1`; NBD: none).
pub fn server_config(
    files: &TlsFiles,
    alpn: &[&[u8]],
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let certs = load_certs(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| TlsError::Pem {
        path: files.key.display().to_string(),
        detail: e.to_string(),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Config(format!("{}: {e}", files.cert.display())))?;
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(cfg))
}

/// TLS on this identity for a front end's streams (NBD's STARTTLS): the data path's
/// [`TlsAcceptor`] seam, on rustls.
pub struct StreamTls {
    acceptor: tokio_rustls::TlsAcceptor,
}

impl StreamTls {
    pub fn new(files: &TlsFiles) -> Result<StreamTls, TlsError> {
        Ok(StreamTls {
            acceptor: server_config(files, &[])?.into(),
        })
    }
}

impl TlsAcceptor for StreamTls {
    fn accept(&self, stream: Box<dyn ByteStream>) -> TlsAccept<'_> {
        Box::pin(async move {
            let s = self
                .acceptor
                .accept(stream)
                .await
                .map_err(|e| std::io::Error::new(e.kind(), format!("TLS handshake: {e}")))?;
            Ok(Box::new(s) as Box<dyn ByteStream>)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_identity_is_reused_and_loads() {
        use rustls::client::danger::ServerCertVerifier;
        let dir = test_support::TestDir::new("tls");
        let f = ensure_generated(&dir, &["10.1.2.3".into(), "0.0.0.0".into()]).unwrap();
        let first = std::fs::read(&f.cert).unwrap();
        assert_eq!(ensure_generated(&dir, &[]).unwrap(), f);
        assert_eq!(
            std::fs::read(&f.cert).unwrap(),
            first,
            "reused, not regenerated"
        );
        let mode = std::fs::metadata(&f.key).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
        assert!(!tls_dir(&dir).join("ca-key.pem").exists());
        server_config(&f, &[b"http/1.1"]).unwrap();
        // The server certificate verifies against the CA for localhost and the extra IP.
        let ca = load_certs(f.ca.as_ref().unwrap()).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca[0].clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        let leaf = load_certs(&f.cert).unwrap();
        for name in ["localhost", "127.0.0.1", "10.1.2.3"] {
            let sn = rustls::pki_types::ServerName::try_from(name.to_string()).unwrap();
            verifier
                .verify_server_cert(&leaf[0], &[], &sn, &[], rustls::pki_types::UnixTime::now())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let other = rustls::pki_types::ServerName::try_from("example.com".to_string()).unwrap();
        assert!(verifier
            .verify_server_cert(
                &leaf[0],
                &[],
                &other,
                &[],
                rustls::pki_types::UnixTime::now()
            )
            .is_err());
        assert!(
            load_certs(&f.key).is_err(),
            "a key file holds no certificate"
        );
    }
}
