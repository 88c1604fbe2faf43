//! TLS to Edge Connect: the simulator behind a TLS relay with a private CA.

use std::sync::Arc;

use crate::support::*;
use tokio_rustls::rustls;

struct TlsFront {
    url: String,
    ca_pem: String,
    _runtime: tokio::runtime::Runtime,
}

/// A TLS terminator on 127.0.0.1 that relays to the simulator, with a certificate from a fresh CA.
fn tls_front(upstream: std::net::SocketAddr) -> TlsFront {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "edge connect test CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf_params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &*ca).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![CertificateDer::from(leaf.der().to_vec())],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    runtime.spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                let Ok(mut plain) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    TlsFront {
        url: format!("https://127.0.0.1:{port}"),
        ca_pem: ca.pem(),
        _runtime: runtime,
    }
}

fn world_behind_tls(extra: &str) -> (World, TlsFront) {
    let w = World::new();
    let front = tls_front(w.sim.addr());
    let text = std::fs::read_to_string(&w.config)
        .unwrap()
        .replace(&w.sim.url(), &front.url);
    let text = text.replace(
        "default_flavor = \"EU.small\"",
        &format!("default_flavor = \"EU.small\"\n{extra}"),
    );
    std::fs::write(&w.config, text).unwrap();
    (w, front)
}

#[test]
fn an_unknown_ca_is_refused() {
    let (w, _front) = world_behind_tls("");
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("certificate"), "{}", r.stderr);
    assert_eq!(w.sim.request_log().len(), 0, "nothing reached the server");
}

#[test]
fn a_configured_ca_bundle_is_trusted() {
    let (w, front) = world_behind_tls("");
    let ca = w.dir.path().join("ca.pem");
    std::fs::write(&ca, &front.ca_pem).unwrap();
    let text = std::fs::read_to_string(&w.config).unwrap().replace(
        "default_flavor = \"EU.small\"",
        &format!(
            "default_flavor = \"EU.small\"\nca_bundle = \"{}\"",
            ca.display()
        ),
    );
    std::fs::write(&w.config, text).unwrap();
    let create = w.create("bootstrap-github-jit.json", "garm-tls", POOL, &[]);
    assert_eq!(create.code, 0, "{}", create.stderr);
    let r = w.garm("DeleteInstance", &[("GARM_INSTANCE_ID", "garm-tls")], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(w.app_names().is_empty());
}

#[test]
fn skipping_verification_works_and_is_logged_loudly() {
    let (w, _front) = world_behind_tls("insecure_skip_verify = true");
    let r = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!((r.code, r.stdout.as_str()), (0, "[]"), "{}", r.stderr);
    assert!(
        w.log_text().contains("WARN") && w.log_text().contains("TLS certificates are NOT verified")
    );
}
