//! The measurer measured: before a pass's first cell, a few requests against the reference
//! engine on loopback tell how far this client's TTFT and decode rate are from when the engine
//! actually sent its tokens, on this machine, now (docs/metrics.md, "What measuring costs").
//! The reference engine is started by the caller (the command line links it; the harness does
//! not, since the engine is built on the harness's corpus).

use std::time::{Duration, Instant};

use anyhow::Context as _;
use benchpass_format::format::SelfCheck;
use benchpass_format::metrics;
use futures_util::future::join_all;

use crate::client::{stream_request, Api, Prompt, RequestConfig};

/// Where the reference engine listens and what it serves, for the self-check. It must send
/// `timings` (`benchpass sim --timings`): the truth the client is held to.
#[derive(Debug, Clone)]
pub struct SelfCheckServer {
    /// `http://127.0.0.1:PORT`, no path.
    pub base_url: String,
    pub model: String,
}

/// Tokens each self-check request asks for: enough for a decode span of many events, few
/// enough that the check takes well under a second at the reference engine's rate.
pub const MAX_TOKENS: u64 = 32;

/// The self-check runs at the pass's largest stream count, up to this many: the client's error
/// grows with the streams it reads at once, and a check at hundreds would load the machine the
/// pass is about to measure on.
pub const MAX_STREAMS: u32 = 32;

/// Rounds of `streams` requests side by side, measured.
const ROUNDS: u32 = 2;

/// Runs the self-check at `streams` streams (capped at [`MAX_STREAMS`]): a round of that many
/// requests side by side that opens the connections, then [`ROUNDS`] rounds measured, every
/// request of which must succeed.
pub async fn run(http: &reqwest::Client, server: &SelfCheckServer, streams: u32) -> anyhow::Result<SelfCheck> {
    let streams = streams.clamp(1, MAX_STREAMS);
    let url = format!("{}{}", server.base_url.trim_end_matches('/'), Api::Chat.path());
    let config = RequestConfig {
        api: Api::Chat,
        model: server.model.clone(),
        temperature: 0.0,
        seed: None,
        ignore_eos: true,
        min_tokens: None,
        extra: None,
        headers: Vec::new(),
        first_token_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
    };
    let body = config.body(&Prompt::Text("benchpass self-check".to_owned()), MAX_TOKENS, None);
    let round = || async {
        let outcomes = join_all((0..streams).map(|_| stream_request(http, &url, None, &config, &body, None))).await;
        for outcome in &outcomes {
            if let Some(error) = &outcome.error {
                anyhow::bail!("a self-check request to the reference engine at {url} failed ({}): {}", error.class, error.message);
            }
        }
        Ok(outcomes)
    };
    // Not counted: a new connection's first request carries its TCP handshake and the
    // connection's setup in its TTFT (seen, one stream on loopback: the first request 1.2–4.9 ms
    // off and the next 0.6–0.9 ms, in 5 checks of 6), and a pass's measured runs reuse the
    // connections its warmups opened.
    round().await?;
    let mut ttft_errors = Vec::new();
    let mut decode_errors = Vec::new();
    for _ in 0..ROUNDS {
        for outcome in round().await? {
            let times = metrics::event_times(&outcome.events);
            let (ttft, decode) = metrics::reference_errors(times.ttft_ms, times.decode_ms, outcome.timings.as_ref())
                .with_context(|| format!("the reference engine at {url} sent no timings to check the client against"))?;
            ttft_errors.push(ttft);
            decode_errors.push(decode);
        }
    }
    let (ttft_error_median_ms, ttft_error_max_ms) = median_and_max(&mut ttft_errors);
    let (decode_error_median, decode_error_max) = median_and_max(&mut decode_errors);
    Ok(SelfCheck {
        streams,
        requests: streams * ROUNDS,
        max_tokens: MAX_TOKENS,
        ttft_error_median_ms,
        ttft_error_max_ms,
        decode_error_median,
        decode_error_max,
    })
}

/// The median (of an even count, the mean of the middle two) and the largest.
fn median_and_max(values: &mut [f64]) -> (f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 };
    (median, values[n - 1])
}

/// The smallest step the monotonic clock takes between two reads in a row, in nanoseconds:
/// reads for up to 20 ms or until it has stepped 1,000 times. A clock that never stepped in
/// that time says 20 ms (it ticks no finer).
pub fn clock_tick_ns() -> u64 {
    let began = Instant::now();
    let mut last = began;
    let mut least = u64::MAX;
    let mut steps = 0;
    while steps < 1_000 && began.elapsed() < Duration::from_millis(20) {
        let now = Instant::now();
        let step = now.duration_since(last).as_nanos() as u64;
        if step > 0 {
            least = least.min(step);
            steps += 1;
        }
        last = now;
    }
    least.min(20_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median_and_max(&mut [3.0, 1.0, 2.0]), (2.0, 3.0));
        assert_eq!(median_and_max(&mut [4.0, 1.0, 3.0, 2.0]), (2.5, 4.0));
    }

    #[test]
    fn the_clock_steps_finer_than_a_millisecond() {
        // Every OS benchpass runs on gives a monotonic clock far finer than a millisecond
        // (Linux and macOS: nanoseconds; Windows: 100 ns); a tick of zero is never reported.
        let tick = clock_tick_ns();
        assert!(tick > 0 && tick < 1_000_000, "{tick}");
    }
}
