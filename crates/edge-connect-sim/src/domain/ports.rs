//! The App `access_ports` syntax (`proto:port[-end][:annotation...]`, comma separated) with
//! the controller's validation texts (`util.ParsePorts`, `edgeproto.ParseAppPorts`).

use crate::config::LoadBalancer;
use crate::model::enums::LProto;
use crate::model::{App, InstPort};

use super::user_manifest;

/// One parsed access port.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PortSpec {
    /// `tcp`, `udp` or `http`.
    pub proto: String,
    /// First port.
    pub port: i32,
    /// Last port of a range, 0 for a single port.
    pub end_port: i32,
    pub tls: bool,
    pub nginx: bool,
    pub max_pkt_size: u64,
    pub internal_vis_only: bool,
    pub id: String,
    pub path_prefix: String,
    pub service_name: String,
    pub host_prefix: String,
}

impl PortSpec {
    /// The last port of the range: the port itself when it is a single one.
    pub(crate) fn last(&self) -> i32 {
        if self.end_port == 0 {
            self.port
        } else {
            self.end_port
        }
    }
}

const MAX_TCP_PORTS: i64 = 1000;
const MAX_UDP_PORTS: i64 = 10_000;
const RESERVED: &[(&str, &str)] = &[
    ("tcp:22", "Platform inter-node SSH"),
    ("tcp:20800", "Kubernetes master join server"),
    ("udp:53", "dns udp"),
    ("tcp:53", "dns tcp"),
];

/// Parses `access_ports`; an empty string is no ports. Errors are the controller's texts
/// (first letter as the controller writes it; the MC capitalises on output).
pub(crate) fn parse(ports: &str) -> Result<Vec<PortSpec>, String> {
    if ports.is_empty() {
        return Ok(Vec::new());
    }
    let mut specs = Vec::new();
    let (mut tcp, mut udp) = (0i64, 0i64);
    for pstr in ports.split(',') {
        let parts: Vec<&str> = pstr.split(':').collect();
        if parts.len() < 2 {
            return Err(format!("invalid AccessPorts format '{pstr}'"));
        }
        let range: Vec<&str> = parts[1].split('-').collect();
        let base: i64 = range[0]
            .parse()
            .map_err(|_| "unable to convert port range base value".to_string())?;
        let mut end: i64 = match range.get(1) {
            Some(e) => e
                .parse()
                .map_err(|_| "unable to convert port range base value".to_string())?,
            None => base,
        };
        if !(1..=65535).contains(&base) || !(1..=65535).contains(&end) || end < base {
            return Err("App ports out of range".into());
        }
        if end == base {
            end = 0;
        }
        let proto = parts[0].to_ascii_lowercase();
        if proto != "tcp" && proto != "udp" && proto != "http" {
            return Err(format!("Unsupported protocol: {}", parts[0]));
        }
        let count = if end == 0 { 1 } else { end - base + 1 };
        if proto == "tcp" {
            tcp += count;
        } else {
            udp += count;
        }
        let mut spec = PortSpec {
            proto: proto.clone(),
            port: base as i32,
            end_port: end as i32,
            ..PortSpec::default()
        };
        for annotation in &parts[2..] {
            if annotation.is_empty() {
                return Err(format!(
                    "invalid AccessPorts annotation {annotation} for port {}, expected format is either key or key=val",
                    parts[1]
                ));
            }
            let (key, val) = annotation.split_once('=').unwrap_or((annotation, "true"));
            match key {
                "tls" => {
                    if proto != "tcp" && proto != "http" {
                        return Err(format!(
                            "Invalid protocol {proto}, not available for tls support"
                        ));
                    }
                    spec.tls = true;
                }
                "nginx" => {
                    if proto != "udp" {
                        return Err(format!("Invalid annotation \"nginx\" for {proto} ports"));
                    }
                    spec.nginx = true;
                }
                "maxpktsize" => {
                    if proto != "udp" {
                        return Err(format!(
                            "Invalid annotation \"maxpktsize\" for {proto} ports, only valid for UDP protocol"
                        ));
                    }
                    let size: u64 = val
                        .parse()
                        .map_err(|_| format!("unable to convert pkt size value: {val}"))?;
                    if !(1500..=50_000).contains(&size) {
                        return Err(
                            "Invalid maxpktsize, should be between range 1500 to 50000 (exclusive)"
                                .into(),
                        );
                    }
                    spec.max_pkt_size = size;
                }
                "intvis" => spec.internal_vis_only = true,
                "id" => spec.id = val.to_string(),
                "pathprefix" => {
                    if proto != "http" {
                        return Err(format!(
                            "invalid annotation pathprefix on port {base}, only allowed on http ports"
                        ));
                    }
                    spec.path_prefix = val.to_string();
                }
                "svcname" => spec.service_name = val.to_string(),
                "hostprefix" => spec.host_prefix = val.to_string(),
                _ => {
                    return Err(format!(
                        "unrecognized annotation {key}={val} for port {}",
                        parts[1]
                    ))
                }
            }
        }
        specs.push(spec);
    }
    if tcp > MAX_TCP_PORTS {
        return Err(format!(
            "Not allowed to specify more than {MAX_TCP_PORTS} tcp ports"
        ));
    }
    if udp > MAX_UDP_PORTS {
        return Err(format!(
            "Not allowed to specify more than {MAX_UDP_PORTS} udp ports"
        ));
    }
    for spec in &specs {
        for port in spec.port..=spec.last() {
            let name = format!("{}:{port}", spec.proto);
            if let Some((_, why)) = RESERVED.iter().find(|(p, _)| *p == name) {
                return Err(format!("App cannot use port {name} - reserved for {why}"));
            }
        }
    }
    Ok(specs)
}

/// The shared load balancer's own range, from which a port already held is moved (main
/// `pkg/controller/appinst_api.go:55, 1213`).
const SHARED_RANGE: std::ops::Range<i32> = 10_000..65_000;
/// Ports the shared load balancer keeps for itself: SSH and its proxy's metrics
/// (`appinst_api.go:1206-1211`, `pkg/cloudcommon/names.go:132`).
const LOAD_BALANCER_OWN: [i32; 2] = [22, 65_121];

/// The mapped ports another live AppInst of the site holds on its load balancer.
pub(crate) struct Held<'a> {
    /// The AppInst's name, for the dedicated load balancer's refusal.
    pub name: &'a str,
    pub ports: &'a [InstPort],
    /// The AppInst has an IP of its own and holds no port of a load balancer.
    pub dedicated_ip: bool,
    /// Its App has `internal_ports`: it holds no port of the shared load balancer.
    pub internal_ports: bool,
}

/// The `mapped_ports` the controller gives a new AppInst of `app` on a site exposed by `lb`,
/// with the ports the site's other live AppInsts hold (docs/edge-connect-behaviours.md B36,
/// main `pkg/controller/appinst_api.go:1140-1258`). Errors are the controller's texts.
pub(crate) fn assign(
    specs: &[PortSpec],
    app: &App,
    dedicated_ip: bool,
    lb: LoadBalancer,
    others: &[Held],
) -> Result<Vec<InstPort>, String> {
    // Only the platforms with an IP per Service run an ingress (B36 a).
    let ingress = lb == LoadBalancer::PerService;
    let mut ports: Vec<InstPort> = specs.iter().map(|s| inst_port(s, ingress)).collect();
    if app.deployment == "vm" {
        for p in &mut ports {
            p.public_port = p.internal_port;
        }
    } else if dedicated_ip || lb == LoadBalancer::PerService {
        for p in ports.iter_mut().filter(|p| p.proto != LProto::Http) {
            p.public_port = p.internal_port;
        }
    } else if lb == LoadBalancer::Shared && !app.internal_ports {
        shared(&mut ports, others)?;
    } else {
        dedicated(&mut ports, others)?;
    }
    if lb == LoadBalancer::PerService && app.deployment == "kubernetes" {
        service_prefixes(&mut ports, &app.deployment_manifest);
    }
    Ok(ports)
}

/// One access port as a mapped port, its public port still to be chosen, except an HTTP
/// port behind the ingress (80, or 443 with `tls`; B36 a). Without an ingress an HTTP port
/// is a TCP port from here on.
fn inst_port(s: &PortSpec, ingress: bool) -> InstPort {
    let (proto, public_port) = match s.proto.as_str() {
        "udp" => (LProto::Udp, 0),
        "http" if ingress => (LProto::Http, if s.tls { 443 } else { 80 }),
        _ => (LProto::Tcp, 0),
    };
    InstPort {
        proto,
        internal_port: s.port,
        public_port,
        end_port: s.end_port,
        tls: s.tls,
        nginx: s.nginx,
        max_pkt_size: s.max_pkt_size,
        internal_vis_only: s.internal_vis_only,
        id: s.id.clone(),
        path_prefix: s.path_prefix.clone(),
        service_name: s.service_name.clone(),
        host_prefix: s.host_prefix.clone(),
        ..InstPort::default()
    }
}

/// The protocol family a port number is held in: TCP and HTTP share one, UDP has its own
/// (`getProtocolBitMap`, `appinst_api.go:298-312`).
fn family(proto: LProto) -> u8 {
    if proto == LProto::Udp {
        2
    } else {
        1
    }
}

/// The shared root load balancer (B36 c): the internal port while it is free in its family,
/// else the lowest free port of the shared range.
fn shared(ports: &mut [InstPort], others: &[Held]) -> Result<(), String> {
    let mut taken: std::collections::BTreeMap<i32, u8> = std::collections::BTreeMap::new();
    for p in others
        .iter()
        .filter(|h| !h.dedicated_ip && !h.internal_ports)
        .flat_map(|h| h.ports)
        .filter(|p| p.proto != LProto::Http)
    {
        *taken.entry(p.public_port).or_default() |= family(p.proto);
    }
    for p in ports.iter_mut() {
        if p.end_port != 0 {
            return Err("Shared IP access with port range not allowed".into());
        }
        if p.proto == LProto::Http {
            continue;
        }
        let bits = family(p.proto);
        let free = |port: &i32| taken.get(port).is_none_or(|held| held & bits == 0);
        let public = if free(&p.internal_port) && !LOAD_BALANCER_OWN.contains(&p.internal_port) {
            p.internal_port
        } else {
            SHARED_RANGE
                .clone()
                .find(free)
                .ok_or("no free external ports")?
        };
        p.public_port = public;
        *taken.entry(public).or_default() |= bits;
    }
    Ok(())
}

/// The cluster's own load balancer (B36 e): every port keeps its number; one that overlaps
/// a port another AppInst of the cluster maps is refused (`checkPortOverlapDedicatedLB`,
/// `appinst_api.go:355-391`; AppInsts with a dedicated IP do not count).
fn dedicated(ports: &mut [InstPort], others: &[Held]) -> Result<(), String> {
    let last = |p: &InstPort| p.end_port.max(p.internal_port);
    let overlap = |a: &InstPort, b: &InstPort| {
        family(a.proto) == family(b.proto)
            && a.internal_port <= last(b)
            && last(a) >= b.internal_port
    };
    // The controller walks the cluster's AppInsts first, then the new ports.
    for holder in others.iter().filter(|h| !h.dedicated_ip) {
        if let Some(p) = ports
            .iter()
            .find(|p| holder.ports.iter().any(|q| overlap(p, q)))
        {
            return Err(if p.end_port != 0 {
                format!(
                    "port range {}-{} overlaps with ports in use on the cluster",
                    p.internal_port, p.end_port
                )
            } else {
                format!(
                    "port {} is already in use on the cluster by AppInst {}",
                    p.internal_port, holder.name
                )
            });
        }
    }
    for p in ports.iter_mut() {
        p.public_port = p.internal_port;
    }
    Ok(())
}

/// Each TCP or UDP port's `fqdn_prefix`: `<Service name>.` of the first Service of the App's
/// manifest with a port of that protocol whose `targetPort` is the internal port (B36 d,
/// `setPortFQDNPrefix`, `appinst_api.go:2448-2474`). No Service port is `http`, so HTTP ports
/// get none; a `targetPort` that is not a number counts as 0, as Go's `IntValue` reads it.
fn service_prefixes(ports: &mut [InstPort], manifest: &str) {
    let Ok(objects) = user_manifest::decode(manifest) else {
        return;
    };
    let services: Vec<&serde_json::Value> =
        objects.iter().filter(|o| o["kind"] == "Service").collect();
    for port in ports.iter_mut() {
        let proto = match port.proto {
            LProto::Tcp => "tcp",
            LProto::Udp => "udp",
            _ => continue,
        };
        let target = |kp: &serde_json::Value| match &kp["targetPort"] {
            serde_json::Value::Number(n) => n.as_i64().unwrap_or_default(),
            serde_json::Value::String(s) => s.parse().unwrap_or_default(),
            _ => 0,
        };
        let service = services.iter().find(|svc| {
            svc["spec"]["ports"].as_array().is_some_and(|kps| {
                kps.iter().any(|kp| {
                    kp["protocol"]
                        .as_str()
                        .is_some_and(|p| p.eq_ignore_ascii_case(proto))
                        && target(kp) == i64::from(port.internal_port)
                })
            })
        });
        if let Some(svc) = service {
            port.fqdn_prefix = format!("{}.", svc["metadata"]["name"].as_str().unwrap_or_default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_annotations() {
        let specs = parse("tcp:8080,udp:10000-10010:nginx,http:443:tls").unwrap();
        assert_eq!(specs.len(), 3);
        assert_eq!(specs[1].end_port, 10010);
        assert!(specs[2].tls);
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn a_full_shared_load_balancer_has_no_free_external_port() {
        let held: Vec<InstPort> = std::iter::once(5000)
            .chain(SHARED_RANGE)
            .map(|port| InstPort {
                proto: LProto::Tcp,
                internal_port: port,
                public_port: port,
                ..InstPort::default()
            })
            .collect();
        let others = [Held {
            name: "busy",
            ports: &held,
            dedicated_ip: false,
            internal_ports: false,
        }];
        let app = App {
            deployment: "kubernetes".into(),
            ..App::default()
        };
        let specs = parse("tcp:5000").unwrap();
        assert_eq!(
            assign(&specs, &app, false, LoadBalancer::Shared, &others).unwrap_err(),
            "no free external ports"
        );
        // UDP is held apart from TCP.
        let udp = parse("udp:5000").unwrap();
        let mapped = assign(&udp, &app, false, LoadBalancer::Shared, &others).unwrap();
        assert_eq!(mapped[0].public_port, 5000);
    }

    #[test]
    fn rejects_with_controller_texts() {
        assert_eq!(
            parse("8080").unwrap_err(),
            "invalid AccessPorts format '8080'"
        );
        assert_eq!(
            parse("tcp:22").unwrap_err(),
            "App cannot use port tcp:22 - reserved for Platform inter-node SSH"
        );
        assert_eq!(parse("sctp:1").unwrap_err(), "Unsupported protocol: sctp");
        assert_eq!(parse("tcp:0").unwrap_err(), "App ports out of range");
        assert_eq!(
            parse("tcp:x").unwrap_err(),
            "unable to convert port range base value"
        );
    }
}
