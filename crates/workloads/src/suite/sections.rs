//! The suites in reports: the network heat map (rows send, columns receive; a pair below
//! its threshold is hatched and says so in words, so the page reads without colour), the
//! charts of the fio suites' tables (each device alone, devices and hosts together, each
//! load generator beside the merged "All clients"), and the Markdown matrix.

use std::fmt::Write as _;

use harness::store::{RunRecord, SummaryTable};
use report::charts::{categories, num, truthy};
use report::svg::{esc, Chart, Mark};
use serde_json::Value;

use super::results::{self, cell, text};

/// One cell of a matrix.
struct Cell {
    goodput: f64,
    rated: Option<f64>,
    threshold: Option<f64>,
    retransmits: f64,
    pass: bool,
    error: String,
    /// Why a miss is inconclusive (a host starved); empty otherwise.
    starved: String,
}

/// A pairs table as (hosts in order, cell of (from, to)).
fn matrix(t: &SummaryTable) -> (Vec<String>, Vec<(String, String, Cell)>) {
    let mut hosts: Vec<String> = Vec::new();
    let mut cells = Vec::new();
    for r in &t.rows {
        let s = |c: &str| cell(t, r, c).map(text).unwrap_or_default();
        let n = |c: &str| cell(t, r, c).and_then(num);
        let (from, to) = (s("from"), s("to"));
        for h in [&from, &to] {
            if !hosts.contains(h) {
                hosts.push(h.clone());
            }
        }
        cells.push((
            from,
            to,
            Cell {
                goodput: n("goodput_mbps").unwrap_or(0.0),
                rated: n("rated_mbps"),
                threshold: n("threshold_mbps"),
                retransmits: n("retransmits").unwrap_or(0.0),
                pass: cell(t, r, "pass").is_some_and(truthy),
                error: s("error"),
                starved: s("starved"),
            },
        ));
    }
    (hosts, cells)
}

/// What a failing cell says, in words (a miss on a starved host says it is inconclusive).
fn failure_words(c: &Cell) -> Option<String> {
    if !c.error.is_empty() {
        return Some("ERROR".into());
    }
    if c.pass {
        return None;
    }
    let miss = match (c.threshold, c.rated) {
        (Some(t), Some(r)) if c.goodput < t => format!("BELOW {:.0}%", 100.0 * t / r),
        _ => "TOO MANY RETRANSMITS".into(),
    };
    Some(if c.starved.is_empty() {
        miss
    } else {
        format!("{miss}, INCONCLUSIVE: HOST STARVED")
    })
}

/// The class a cell's words are shown in.
fn words_class(c: &Cell) -> &'static str {
    if c.starved.is_empty() {
        "FAIL"
    } else {
        "INCONCLUSIVE"
    }
}

/// The heat map of one pairs table as an HTML table.
pub fn heat_map(t: &SummaryTable) -> String {
    let (hosts, cells) = matrix(t);
    let mut o =
        String::from("<table class=\"heatmap\"><thead><tr><th>sends &darr; / receives &rarr;</th>");
    for h in &hosts {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr></thead><tbody>");
    for from in &hosts {
        let _ = write!(o, "<tr><th>{}</th>", esc(from));
        for to in &hosts {
            let Some((_, _, c)) = cells.iter().find(|(f, x, _)| f == from && x == to) else {
                o.push_str("<td class=\"n\" style=\"background:#eee\">&mdash;</td>");
                continue;
            };
            // Shade by share of the rated speed (darker = closer to it); a failing cell is
            // hatched and says why.
            let share = c
                .rated
                .filter(|r| *r > 0.0)
                .map(|r| (c.goodput / r).clamp(0.0, 1.0));
            let alpha = share.map_or(0.15, |s| 0.08 + 0.5 * s);
            let words = failure_words(c);
            let style = if words.is_some() {
                "background: repeating-linear-gradient(45deg, rgba(213,94,0,.28) 0 5px, #fff 5px 10px); border: 2px solid #D55E00".to_string()
            } else {
                format!("background: rgba(0,114,178,{alpha:.2})")
            };
            let _ = write!(
                o,
                "<td class=\"n{}\" style=\"{style}\"{}>{}<b>{:.0}</b> Mbit/s<br><span class=\"meta\">{}r {:.0}</span></td>",
                if words.is_some() { " below" } else { "" },
                if c.starved.is_empty() {
                    String::new()
                } else {
                    format!(" title=\"{}\"", esc(&c.starved))
                },
                words
                    .as_deref()
                    .map(|w| format!("<strong class=\"{}\">{}</strong><br>", words_class(c), esc(w)))
                    .unwrap_or_default(),
                c.goodput,
                match (share, c.rated) {
                    // Floored, so a pair just under a 90% threshold never reads "90%".
                    (Some(s), Some(r)) => format!("{:.0}% of {r:.0} &middot; ", (100.0 * s).floor()),
                    _ => String::new(),
                },
                c.retransmits
            );
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table>");
    o
}

/// The network section of the HTML report: a heat map per pairs table.
pub fn html(run: &RunRecord) -> String {
    let tables: Vec<&SummaryTable> = run
        .tables
        .iter()
        .filter(|t| t.kind == results::PAIRS)
        .collect();
    if tables.is_empty() {
        return String::new();
    }
    let mut o = String::from(
        "<h2 id=\"network-mesh\">Network mesh</h2><p class=\"meta\">Goodput per ordered pair: rows send, columns receive. \
         Shading deepens with the share of the pair's rated speed; a pair that fails its verdict is hatched, outlined and \
         says why in words (BELOW n%: under the threshold; TOO MANY RETRANSMITS; ERROR; INCONCLUSIVE: HOST STARVED when a host of the pair \
         waited for a CPU too long to tell). r = TCP retransmits.</p>",
    );
    for t in tables {
        let cells = matrix(t).1;
        // The pairs not passed, failed ones and inconclusive ones apart.
        let listed = |inconclusive: bool| {
            cells
                .iter()
                .filter(|(_, _, c)| {
                    failure_words(c).is_some() && c.starved.is_empty() != inconclusive
                })
                .map(|(f, x, c)| {
                    format!("{f} &rarr; {x} ({})", failure_words(c).unwrap_or_default())
                })
                .collect::<Vec<_>>()
        };
        let (failing, inconclusive) = (listed(false), listed(true));
        let _ = write!(o, "<h3>{}</h3>{}", esc(&t.name), heat_map(t));
        let mut summary = if !failing.is_empty() {
            format!("Failing: {}.", failing.join(", "))
        } else if !inconclusive.is_empty() {
            String::new()
        } else if cells.iter().all(|(_, _, c)| c.threshold.is_none()) {
            "No pair exceeded the retransmit limit (all at once, the rate is judged per host: below)."
                .to_string()
        } else {
            "Every pair passed.".to_string()
        };
        if !inconclusive.is_empty() {
            let _ = write!(
                summary,
                "{}Inconclusive, measured while a host starved: {}.",
                if summary.is_empty() { "" } else { " " },
                inconclusive.join(", ")
            );
        }
        let _ = write!(o, "<p>{summary}</p>");
    }
    if let Some(h) = run.tables.iter().find(|t| t.kind == results::HOSTS) {
        o.push_str("<p class=\"meta\">Per host under load (out = the sum of what it sent, in = of what it received):</p><ul>");
        for r in &h.rows {
            let s = |c: &str| cell(h, r, c).map(text).unwrap_or_default();
            let _ = write!(
                o,
                "<li>{}: out {} Mbit/s, in {} Mbit/s, rated {} ({}){}</li>",
                esc(&s("host")),
                esc(&s("out_mbps")),
                esc(&s("in_mbps")),
                esc(&s("rated_mbps")),
                esc(&s("rated_from")),
                match (cell(h, r, "pass").is_some_and(truthy), s("starved")) {
                    (true, _) => String::new(),
                    (false, why) if why.is_empty() => {
                        " &mdash; <strong class=\"FAIL\">BELOW THRESHOLD</strong>".into()
                    }
                    (false, why) => format!(
                        " &mdash; <strong class=\"INCONCLUSIVE\">BELOW THRESHOLD, INCONCLUSIVE</strong> ({})",
                        esc(&why)
                    ),
                }
            );
        }
        o.push_str("</ul>");
    }
    o
}

/// The network matrices in Markdown.
pub fn markdown(run: &RunRecord) -> String {
    let mut o = String::new();
    for t in run.tables.iter().filter(|t| t.kind == results::PAIRS) {
        let (hosts, cells) = matrix(t);
        let _ = writeln!(
            o,
            "## Network: {} (Mbit/s; rows send, columns receive)\n",
            t.name
        );
        let _ = writeln!(o, "| from \\ to | {} |", hosts.join(" | "));
        let _ = writeln!(o, "|---|{}", "---:|".repeat(hosts.len()));
        for from in &hosts {
            let row: Vec<String> = hosts
                .iter()
                .map(
                    |to| match cells.iter().find(|(f, x, _)| f == from && x == to) {
                        None => "-".into(),
                        Some((_, _, c)) => format!(
                            "{:.0} r{:.0}{}",
                            c.goodput,
                            c.retransmits,
                            failure_words(c)
                                .map(|w| format!(" **{w}**"))
                                .unwrap_or_default()
                        ),
                    },
                )
                .collect();
            let _ = writeln!(o, "| {from} | {} |", row.join(" | "));
        }
        o.push('\n');
    }
    o
}

fn s(v: Option<&Value>) -> String {
    v.map(text).unwrap_or_default()
}

/// Charts of the suites' tables.
pub fn charts(t: &SummaryTable) -> Option<Vec<Chart>> {
    let out = match t.kind.as_str() {
        results::INTERVALS => intervals(t),
        results::FIO => fio(t),
        results::CLIENTS => clients(t),
        k if results::KINDS.contains(&k) => Vec::new(),
        _ => return None,
    };
    Some(out.into_iter().filter(Chart::has_data).collect())
}

fn intervals(t: &SummaryTable) -> Vec<Chart> {
    let mut c = Chart::new(
        "all pairs at once: goodput per second",
        "time (s, after the omitted start)",
        "Mbit/s",
    );
    let mut pairs: Vec<(String, String)> = Vec::new();
    for r in &t.rows {
        let k = (s(cell(t, r, "from")), s(cell(t, r, "to")));
        if !pairs.contains(&k) {
            pairs.push(k);
        }
    }
    for (k, (from, to)) in pairs.iter().enumerate() {
        c.line(
            format!("{from} -> {to}"),
            t.rows
                .iter()
                .filter(|r| &s(cell(t, r, "from")) == from && &s(cell(t, r, "to")) == to)
                .filter_map(|r| Some((num(cell(t, r, "t_s")?)?, num(cell(t, r, "mbps")?)?)))
                .collect(),
            k,
        );
    }
    vec![c]
}

/// Mean IOPS per place, one line per job: each device alone, then devices together
/// (a host's devices, every host at once) — pass/fail marks from the steady-state and
/// spread checks.
fn fio(t: &SummaryTable) -> Vec<Chart> {
    let mut out = Vec::new();
    for (stages, title) in [
        (&["device"][..], "each device alone: mean IOPS"),
        (
            &["host", "cluster"][..],
            "cumulative: all devices of a host, every host at once: mean IOPS",
        ),
    ] {
        let rows: Vec<&Vec<Value>> = t
            .rows
            .iter()
            .filter(|r| stages.contains(&s(cell(t, r, "stage")).as_str()))
            .collect();
        let stage_rows = if rows.is_empty() {
            // Storage suites: one stage, the kind itself.
            if stages[0] != "device" {
                continue;
            }
            t.rows.iter().collect()
        } else {
            rows
        };
        let mut places: Vec<(f64, String)> = Vec::new();
        for r in &stage_rows {
            let p = s(cell(t, r, "where"));
            if !places.iter().any(|(_, q)| *q == p) {
                places.push((places.len() as f64 + 1.0, p));
            }
        }
        let mut jobs: Vec<String> = Vec::new();
        for r in &stage_rows {
            let j = s(cell(t, r, "job"));
            if !jobs.contains(&j) {
                jobs.push(j);
            }
        }
        let title = if stage_rows.len() == t.rows.len()
            && !t.rows.iter().any(|r| s(cell(t, r, "stage")) == "device")
        {
            format!("{}: mean IOPS per job", t.name)
        } else {
            title.to_string()
        };
        let mut c = Chart::categorical(title, "where", "IOPS", categories(&places));
        for (k, j) in jobs.iter().enumerate() {
            let mut points = Vec::new();
            for r in stage_rows.iter().filter(|r| &s(cell(t, r, "job")) == j) {
                let Some((x, _)) = places.iter().find(|(_, p)| *p == s(cell(t, r, "where"))) else {
                    continue;
                };
                if let Some(y) = cell(t, r, "iops_mean").and_then(num) {
                    points.push((*x, y));
                    c.marks.push(Mark {
                        x: *x,
                        y,
                        pass: cell(t, r, "pass").is_some_and(truthy),
                    });
                }
            }
            c.line(j.clone(), points, k);
        }
        out.push(c);
    }
    out
}

/// IOPS per client and merged, per job (mean over the iterations; runs with one client
/// left out).
fn clients(t: &SummaryTable) -> Vec<Chart> {
    let mut jobs: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let multi = |r: &Vec<Value>| {
        let key = (
            s(cell(t, r, "job")),
            s(cell(t, r, "iteration")),
            s(cell(t, r, "where")),
        );
        t.rows
            .iter()
            .filter(|x| {
                (
                    s(cell(t, x, "job")),
                    s(cell(t, x, "iteration")),
                    s(cell(t, x, "where")),
                ) == key
            })
            .count()
            > 2
    };
    let rows: Vec<&Vec<Value>> = t.rows.iter().filter(|r| multi(r)).collect();
    for r in &rows {
        let j = format!("{} on {}", s(cell(t, r, "job")), s(cell(t, r, "where")));
        if !jobs.contains(&j) {
            jobs.push(j);
        }
        let c = s(cell(t, r, "client"));
        if !names.contains(&c) {
            names.push(c);
        }
    }
    // "All clients" last.
    names.sort_by_key(|n| n == fio::result::ALL_CLIENTS);
    let cats: Vec<(f64, String)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (i as f64 + 1.0, n.clone()))
        .collect();
    let mut c = Chart::categorical(
        "each load generator and the merged figure (All clients): mean IOPS over the iterations",
        "client",
        "IOPS",
        categories(&cats),
    );
    for (k, j) in jobs.iter().enumerate() {
        let mut points = Vec::new();
        for (x, n) in &cats {
            let v: Vec<f64> = rows
                .iter()
                .filter(|r| {
                    format!("{} on {}", s(cell(t, r, "job")), s(cell(t, r, "where"))) == *j
                        && s(cell(t, r, "client")) == *n
                })
                .filter_map(|r| cell(t, r, "iops").and_then(num))
                .collect();
            if !v.is_empty() {
                points.push((*x, v.iter().sum::<f64>() / v.len() as f64));
            }
        }
        c.line(j.clone(), points, k);
    }
    vec![c]
}

#[cfg(test)]
mod tests {
    use super::*;
    use suites::iperf::IperfRun;
    use suites::network::Pair;

    fn pair(from: &str, to: &str, mbps: f64, ok: bool) -> Pair {
        Pair {
            from: from.into(),
            to: to.into(),
            rated_mbps: Some(1000),
            run: Some(IperfRun {
                goodput_bps: mbps * 1e6,
                retransmits: 3,
                ..IperfRun::default()
            }),
            error: None,
            rate_ok: Some(ok),
            retransmits_ok: true,
            cpu_wait_pct: [None, None],
            command: String::new(),
            raw: String::new(),
        }
    }

    #[test]
    fn the_heat_map_says_which_pairs_fail_in_words() {
        let t = results::pairs(
            results::CONNECTIVITY,
            &[
                pair("a", "b", 191.0, false),
                pair("b", "a", 950.0, true),
                pair("a", "c", 940.0, true),
                pair("c", "a", 930.0, true),
                pair("b", "c", 945.0, true),
                pair("c", "b", 955.0, true),
            ],
            0.9,
        );
        let h = heat_map(&t);
        assert_eq!(h.matches(">BELOW 90%<").count(), 1, "{h}");
        assert_eq!(h.matches("&mdash;").count(), 3, "the diagonal: {h}");
        assert!(
            h.contains("<b>191</b> Mbit/s<br><span class=\"meta\">19% of 1000 &middot; r 3"),
            "{h}"
        );
        // The failing cell is hatched as well as worded; passing cells are not.
        assert_eq!(h.matches("repeating-linear-gradient").count(), 1);
        let run = RunRecord {
            tables: vec![t],
            ..harness_run()
        };
        let page = html(&run);
        assert!(page.contains("Failing: a &rarr; b (BELOW 90%)."), "{page}");
        let md = markdown(&run);
        assert!(
            md.contains("| a | - | 191 r3 **BELOW 90%** | 940 r3 |"),
            "{md}"
        );
    }

    #[test]
    fn a_pair_missed_on_a_starved_host_is_worded_inconclusive_not_failing() {
        let mut starved = pair("a", "b", 191.0, false);
        starved.cpu_wait_pct = [Some(62.0), Some(3.0)];
        let t = results::pairs(
            results::CONNECTIVITY,
            &[starved, pair("b", "a", 950.0, true)],
            0.9,
        );
        let h = heat_map(&t);
        assert!(
            h.contains(
                "<strong class=\"INCONCLUSIVE\">BELOW 90%, INCONCLUSIVE: HOST STARVED</strong>"
            ),
            "{h}"
        );
        assert!(
            h.contains("title=\"starved-host: some task on a waited for a CPU 62%"),
            "{h}"
        );
        let page = html(&RunRecord {
            tables: vec![t],
            ..harness_run()
        });
        assert!(!page.contains("Failing:"), "{page}");
        assert!(
            page.contains("Inconclusive, measured while a host starved: a &rarr; b (BELOW 90%, INCONCLUSIVE: HOST STARVED)."),
            "{page}"
        );
    }

    fn harness_run() -> RunRecord {
        RunRecord {
            id: 1,
            name: "n".into(),
            status: "failed".into(),
            runtime_s: 1.0,
            ..Default::default()
        }
    }

    #[test]
    fn fio_tables_chart_each_device_and_the_cumulative_runs() {
        let t = SummaryTable {
            kind: results::FIO.into(),
            name: "disks results".into(),
            columns: results::FIO_COLUMNS.iter().map(|c| c.to_string()).collect(),
            rows: [
                ("device", "h0:/dev/a"),
                ("device", "h0:/dev/b"),
                ("host", "h0:/dev/a:/dev/b"),
            ]
            .iter()
            .map(|(stage, place)| {
                results::FIO_COLUMNS
                    .iter()
                    .map(|c| match *c {
                        "stage" => Value::from(*stage),
                        "job" => Value::from("fio.write.single.randwrite"),
                        "where" => Value::from(*place),
                        "pass" => Value::from(true),
                        _ => Value::from(100.0),
                    })
                    .collect()
            })
            .collect(),
        };
        let c = charts(&t).unwrap();
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(c[0].x_categories.len(), 2);
        assert_eq!(c[1].x_categories.len(), 1);
        assert!(charts(&SummaryTable {
            kind: "other".into(),
            ..t
        })
        .is_none());
    }
}
