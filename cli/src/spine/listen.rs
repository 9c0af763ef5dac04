//! The `--listen` address of `qtrace recv` and `qtrace live`.

use std::net::{SocketAddr, ToSocketAddrs};

/// Resolves `--listen`: an IP:PORT, or HOST:PORT looked up (its first IPv4
/// address, else its first IPv6 one).
pub fn listen_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = text.parse::<SocketAddr>() {
        return Ok(a);
    }
    if !text.contains(':') {
        return Err(format!(
            "--listen {text}: give a port too, as IP:PORT (127.0.0.1:5510) or HOST:PORT (localhost:5510)"
        ));
    }
    match text.to_socket_addrs() {
        // IPv4 first: UDP queues send to 127.0.0.1 by default, and
        // `localhost` may list ::1 first.
        Ok(addrs) => {
            let addrs: Vec<SocketAddr> = addrs.collect();
            addrs
                .iter()
                .find(|a| a.is_ipv4())
                .or(addrs.first())
                .copied()
                .ok_or_else(|| {
                    format!(
                        "--listen {text}: the host name has no address; write IP:PORT, e.g. 127.0.0.1:5510"
                    )
                })
        }
        Err(e) => Err(format!(
            "--listen {text}: {e}; write IP:PORT (127.0.0.1:5510) or HOST:PORT (localhost:5510)"
        )),
    }
}
