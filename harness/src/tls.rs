//! HTTPS: rustls with the operating system's trusted roots, plus certificates the user names
//! (`--ca-cert`, for a server with a private or self-signed certificate). Registered once per
//! process, like the API key, and added to every HTTP client benchpass makes.

use std::path::Path;
use std::sync::Mutex;

use anyhow::Context as _;

static EXTRA_ROOTS: Mutex<Vec<reqwest::Certificate>> = Mutex::new(Vec::new());

/// Trusts the PEM certificate(s) in `path` for every HTTPS request from now on.
pub fn trust_ca_file(path: &Path) -> anyhow::Result<()> {
    let pem = std::fs::read(path).with_context(|| format!("--ca-cert {}", path.display()))?;
    let certificates = reqwest::Certificate::from_pem_bundle(&pem)
        .with_context(|| format!("--ca-cert {}: not a PEM certificate (-----BEGIN CERTIFICATE-----)", path.display()))?;
    anyhow::ensure!(!certificates.is_empty(), "--ca-cert {}: holds no PEM certificate", path.display());
    EXTRA_ROOTS.lock().unwrap_or_else(|e| e.into_inner()).extend(certificates);
    Ok(())
}

/// `builder` trusting the certificates registered with [`trust_ca_file`].
pub fn with_extra_roots(mut builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    for certificate in EXTRA_ROOTS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        builder = builder.add_root_certificate(certificate.clone());
    }
    builder
}
