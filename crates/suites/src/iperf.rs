//! iperf3's JSON (`-J`, checked against 3.12's output): what one client→server test says.
//!
//! Goodput is the receiver's rate (`end.sum_received.bits_per_second`); retransmits are the
//! sender's (`end.sum_sent.retransmits`, from tcp_info); RTT is the sender stream's
//! `mean_rtt`/`min_rtt`/`max_rtt` in µs (averaged over streams); CPU is
//! `end.cpu_utilization_percent.host_total` (the client) and `remote_total` (the server).

use serde::Serialize;
use serde_json::Value;

/// One iperf3 test's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IperfRun {
    pub goodput_bps: f64,
    pub sent_bps: f64,
    pub retransmits: u64,
    pub rtt_mean_us: f64,
    pub rtt_min_us: f64,
    pub rtt_max_us: f64,
    pub cpu_client_pct: f64,
    pub cpu_server_pct: f64,
    pub seconds: f64,
    pub congestion: String,
    /// iperf3's per-second reports after the omitted start: (end of the interval, s; sent
    /// bits/s; retransmits in it).
    pub intervals: Vec<(f64, f64, u64)>,
}

/// Parse `iperf3 -J` output; iperf3's own `"error"` becomes the error text.
pub fn parse(json: &str) -> Result<IperfRun, String> {
    let start = json.find('{').ok_or_else(|| {
        format!(
            "iperf3 printed no JSON: {:?}",
            json.chars().take(200).collect::<String>()
        )
    })?;
    let v: Value = serde_json::from_str(&json[start..]).map_err(|e| format!("iperf3 JSON: {e}"))?;
    if let Some(err) = v.get("error").and_then(Value::as_str) {
        return Err(format!("iperf3: {err}"));
    }
    let end = v.get("end").ok_or("iperf3 JSON has no \"end\"")?;
    let f = |x: &Value, k: &str| x.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let recv = &end["sum_received"];
    let sent = &end["sum_sent"];
    if recv.is_null() || sent.is_null() {
        return Err("iperf3 JSON: no sum_sent/sum_received (a UDP test?)".into());
    }
    let streams: Vec<&Value> = end["streams"]
        .as_array()
        .map(|a| a.iter().map(|s| &s["sender"]).collect())
        .unwrap_or_default();
    let avg = |k: &str| {
        if streams.is_empty() {
            0.0
        } else {
            streams.iter().map(|s| f(s, k)).sum::<f64>() / streams.len() as f64
        }
    };
    let cpu = &end["cpu_utilization_percent"];
    let intervals = v["intervals"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| &i["sum"])
                .filter(|x| !x["omitted"].as_bool().unwrap_or(false))
                .map(|x| {
                    (
                        f(x, "end"),
                        f(x, "bits_per_second"),
                        x["retransmits"].as_u64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(IperfRun {
        goodput_bps: f(recv, "bits_per_second"),
        sent_bps: f(sent, "bits_per_second"),
        retransmits: sent.get("retransmits").and_then(Value::as_u64).unwrap_or(0),
        rtt_mean_us: avg("mean_rtt"),
        rtt_min_us: streams
            .iter()
            .map(|s| f(s, "min_rtt"))
            .reduce(f64::min)
            .unwrap_or(0.0),
        rtt_max_us: streams.iter().map(|s| f(s, "max_rtt")).fold(0.0, f64::max),
        cpu_client_pct: f(cpu, "host_total"),
        cpu_server_pct: f(cpu, "remote_total"),
        seconds: f(recv, "seconds"),
        congestion: end["sender_tcp_congestion"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        intervals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = r#"{"start":{"connected":[{"socket":5}]},"intervals":[
        {"streams":[],"sum":{"start":0,"end":1.0,"bits_per_second":5e8,"retransmits":9,"omitted":true}},
        {"streams":[],"sum":{"start":0,"end":1.0,"bits_per_second":9.4e8,"retransmits":2,"omitted":false}},
        {"streams":[],"sum":{"start":1.0,"end":2.0,"bits_per_second":9.6e8,"retransmits":1,"omitted":false}}],
      "end":{"streams":[{"sender":{"socket":5,"bits_per_second":9.6e8,"retransmits":3,
        "max_rtt":2100,"min_rtt":300,"mean_rtt":1136},"receiver":{"bits_per_second":9.5e8}}],
      "sum_sent":{"seconds":3.0,"bytes":1,"bits_per_second":9.6e8,"retransmits":3,"sender":true},
      "sum_received":{"seconds":3.0,"bytes":1,"bits_per_second":9.5e8,"sender":true},
      "cpu_utilization_percent":{"host_total":0.5,"remote_total":0.7},
      "sender_tcp_congestion":"cubic"}}"#;

    #[test]
    fn figures() {
        let r = parse(OUT).unwrap();
        assert_eq!(r.goodput_bps, 9.5e8);
        assert_eq!(r.retransmits, 3);
        assert_eq!(
            (r.rtt_mean_us, r.rtt_min_us, r.rtt_max_us),
            (1136.0, 300.0, 2100.0)
        );
        assert_eq!((r.cpu_client_pct, r.cpu_server_pct), (0.5, 0.7));
        assert_eq!(r.congestion, "cubic");
        assert_eq!(r.intervals, vec![(1.0, 9.4e8, 2), (2.0, 9.6e8, 1)]);
    }

    #[test]
    fn iperf_errors_are_reported() {
        let e = parse(r#"{"start":{},"intervals":[],"end":{},"error":"unable to connect to server: Connection refused"}"#)
            .unwrap_err();
        assert!(e.contains("Connection refused"), "{e}");
        assert!(parse("iperf3: error").is_err());
    }
}
