//! A loopback port for a server benchpass is about to start (the demo's engines, the tests').
//!
//! Asking the kernel for port 0 and handing the number on is a race: the number comes from the
//! range the kernel also gives every outgoing connection, and a connection that takes it in the
//! meantime — or lies in TIME_WAIT on it for a minute after — keeps the server from binding it
//! (a client socket is bound without SO_REUSEADDR, so even a server that sets it is refused). A
//! port below that range is never handed out that way: only a process that names it can take it.

use std::net::{Ipv4Addr, TcpListener};
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};

/// The lowest port handed out: above the ports services commonly listen on.
const FLOOR: u16 = 10_000;

/// A loopback port no socket is bound to now, outside the range the kernel hands out to
/// outgoing connections. Successive calls in one process give different ports, and processes
/// start at different places, so that concurrent test runs seldom try the same one.
pub fn unclaimed_port() -> u16 {
    let range = below_ephemeral();
    let span = u32::from(range.end - range.start);
    // One walk over the range per process, from a place of its own (its pid).
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let _ = NEXT.compare_exchange(u32::MAX, std::process::id().wrapping_mul(7919) % span, Ordering::Relaxed, Ordering::Relaxed);
    let walk = (0..span).map(|_| {
        let offset = NEXT.fetch_add(1, Ordering::Relaxed) % span;
        // `offset < span`, and `range.start + span` is `range.end`, a u16.
        range.start + offset as u16
    });
    // Every port below the range bound: the kernel's choice, with its race, is all that is left.
    first_unbound(walk).unwrap_or_else(|| {
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(0)
    })
}

/// The first of `candidates` that a loopback listener can bind now.
fn first_unbound(mut candidates: impl Iterator<Item = u16>) -> Option<u16> {
    candidates.find(|&port| TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok())
}

/// The ports from [`FLOOR`] up to the first one the kernel hands out to outgoing connections.
fn below_ephemeral() -> Range<u16> {
    // A range that starts below the floor leaves too few ports under it: take the floor's
    // thousand and let the bind check skip any that are taken.
    FLOOR..first_ephemeral().clamp(FLOOR + 1_000, 32_768)
}

/// The first port the kernel hands out to outgoing connections: Linux says where its range
/// starts; macOS and Windows start theirs at 49152, and 32768 is below both.
pub fn first_ephemeral() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(if cfg!(target_os = "linux") { 32_768 } else { 49_152 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_below_the_ephemeral_range_and_differ_call_to_call() {
        let range = below_ephemeral();
        assert!(range.start >= FLOOR && range.end <= 32_768, "{range:?}");
        let ports: Vec<u16> = (0..50).map(|_| unclaimed_port()).collect();
        assert!(ports.iter().all(|p| range.contains(p)), "{ports:?} outside {range:?}");
        let mut distinct = ports.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
    }

    #[test]
    fn a_bound_port_is_skipped() {
        let held_port = unclaimed_port();
        let _held = TcpListener::bind((Ipv4Addr::LOCALHOST, held_port)).unwrap();
        let next = first_unbound([held_port, held_port].into_iter().chain(FLOOR..32_768));
        assert!(next.is_some_and(|p| p != held_port), "{next:?}");
        assert_eq!(first_unbound([held_port].into_iter()), None);
    }
}
