//! The App `access_ports` syntax (`proto:port[-end][:annotation...]`, comma separated) with
//! the controller's validation texts (`util.ParsePorts`, `edgeproto.ParseAppPorts`).

use crate::model::enums::LProto;
use crate::model::InstPort;

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

/// The `mapped_ports` entries of an instance (public port = internal port on a shared LB).
pub(crate) fn mapped(specs: &[PortSpec]) -> Vec<InstPort> {
    specs
        .iter()
        .map(|s| InstPort {
            proto: match s.proto.as_str() {
                "udp" => LProto::Udp,
                "http" => LProto::Http,
                _ => LProto::Tcp,
            },
            internal_port: s.port,
            public_port: s.port,
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
        })
        .collect()
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
