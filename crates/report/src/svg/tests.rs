use super::*;

#[test]
fn ticks_and_steps() {
    assert_eq!(nice_step(540.0, 5.0), 200.0);
    assert_eq!(nice_step(10.0, 5.0), 2.0);
    assert_eq!(nice_step(12.0, 5.0), 2.5);
    assert_eq!(tick(500.0, Unit::Count), "500");
    assert_eq!(tick(15_300.0, Unit::Count), "15.3k");
    assert_eq!(tick(104_857_600.0, Unit::BytesPerSec), "100MiB/s");
    assert_eq!(tick(2.5, Unit::Secs), "2.5s");
    assert_eq!(tick(0.25, Unit::Secs), "0.25s");
    assert_eq!(esc("<a&\"b\">"), "&lt;a&amp;&quot;b&quot;&gt;");
}

#[test]
fn a_line_on_its_ceiling_is_drawn_at_the_ceilings_height() {
    let mut c = Chart::new("vol500 <IOPS>", "time", "IOPS");
    c.line("fio", vec![(0.5, 500.0), (1.0, 500.0)], 0);
    c.refs.push(RefLine {
        label: "ceiling 500 IOPS".into(),
        y: 500.0,
        style: CEILING,
    });
    c.marks.push(Mark {
        x: 1.0,
        y: 500.0,
        pass: false,
    });
    let s = render(&c);
    assert!(s.starts_with("<svg class=\"qchart\""), "{s}");
    assert!(s.contains("<title>vol500 &lt;IOPS&gt;</title>"));
    assert!(s.contains(r#"data-points="2""#));
    // The series path and the ceiling line share their y coordinate.
    let path = s.split(r#"class="series" d="M"#).nth(1).unwrap();
    let y = path
        .split(['L', '"'])
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap();
    assert!(s.contains(&format!(r#"y1="{y}""#)), "{y} in {s}");
    assert!(s.contains("class=\"fail\"") && s.contains(">fail</text>"));
    assert!(!Chart::new("e", "x", "y").has_data());
}

/// The y coordinates of a chart's series paths, in drawing order.
fn path_ys(s: &str) -> Vec<Vec<f64>> {
    s.split(r#"class="series" d="M"#)
        .skip(1)
        .map(|p| {
            p.split('"')
                .next()
                .unwrap()
                .split(['M', 'L'])
                .map(|xy| xy.split(' ').nth(1).unwrap().parse::<f64>().unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn a_y_title_longer_than_the_plot_is_drawn_on_two_lines() {
    let short = Chart::new("cpu", "time (s)", "IOPS");
    let one = render(&short);
    assert!(one.contains(r#"rotate(-90)" text-anchor="middle" class="al">IOPS</text>"#));
    let long = "% (of one core for processes; of all CPUs for idle and steal)";
    let two = render(&Chart::new("cpu", "time (s)", long));
    assert!(
        two.contains(r#"<tspan x="0" dy="0">% (of one core for processes;</tspan><tspan x="0" dy="12">of all CPUs for idle and steal)</tspan>"#),
        "{two}"
    );
    // Each line fits the plot's height.
    let ph = H - T - B;
    for l in [
        "% (of one core for processes;",
        "of all CPUs for idle and steal)",
    ] {
        assert!(l.len() as f64 * CHAR_W <= ph, "{l}");
    }
}

#[test]
fn a_second_axis_has_its_own_scale_ticks_and_legend() {
    let mut c = Chart::new("burst", "time", "IOPS");
    c.line("fio", vec![(0.5, 3000.0), (1.0, 3000.0), (1.5, 300.0)], 0);
    let without = render(&c);
    c.y2 = Some(Axis2 {
        label: "credit balance (% of bucket)".into(),
        unit: Unit::Percent,
        max: Some(100.0),
        lines: vec![Line {
            label: "balance".into(),
            points: vec![(0.5, 100.0), (1.0, 50.0), (1.5, 0.0)],
            style: 4,
        }],
    });
    let with = render(&c);
    assert!(!without.contains("right axis") && !without.contains("rotate(90)"));
    assert!(with.contains(">balance (right axis)</text>"), "{with}");
    assert!(with.contains(">credit balance (% of bucket)</text>"));
    assert!(with.contains(">100%</text>") && with.contains(">40%</text>"));
    assert!(with.contains(r#"data-points="6""#));
    let ys = path_ys(&with);
    assert_eq!(ys.len(), 2);
    // The right axis: 100% at the plot's top, 0% at its bottom, 50% halfway.
    let (top, bottom) = (T, T + (H - T - B));
    assert_eq!(ys[1], vec![top, (top + bottom) / 2.0, bottom]);
    // The left axis keeps its own scale (3,000 IOPS is below its round top).
    assert!(ys[0][0] > top && ys[0][2] < bottom, "{:?}", ys[0]);
    // The plot narrows for the right axis' labels: the x of the last point moves left.
    let last_x = |s: &str| -> f64 {
        let p = s.split(r#"class="series" d="M"#).nth(1).unwrap();
        let p = p.split('"').next().unwrap();
        p.rsplit('L')
            .next()
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(last_x(&without), W - R);
    assert_eq!(last_x(&with), W - R2);
    // Without a fixed top the axis is round above its data.
    c.y2.as_mut().unwrap().max = None;
    assert!(render(&c).contains(">125%</text>"));
    assert_eq!(tick(42.5, Unit::Percent), "42.5%");
}
