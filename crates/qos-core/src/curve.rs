//! Where a request size falls on a curve of `(size, value)` points sorted by size: the
//! I/O-size accounting's cost curve ([`crate::accounting::CostCurve`]) and the array's
//! service curve ([`crate::array::ServiceCurve`]) both interpolate between their points
//! and extrapolate past the last one in proportion to the size.

/// The part of a curve a size falls in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Span<T> {
    /// At or below the first point: its value.
    First(T),
    /// Past the last point: that point (the value grows with the size).
    Past((u64, T)),
    /// Between two points (above the first, at or below the second).
    Between((u64, T), (u64, T)),
}

/// The span of `points` (sorted by size, at least one) that `bytes` falls in.
pub(crate) fn span<T: Copy>(points: &[(u64, T)], bytes: u64) -> Span<T> {
    let (s0, v0) = points[0];
    if bytes <= s0 {
        return Span::First(v0);
    }
    let i = points.partition_point(|&(s, _)| s < bytes);
    match points.get(i) {
        None => Span::Past(points[points.len() - 1]),
        Some(&b) => Span::Between(points[i - 1], b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_falls_on_or_before_the_first_point_between_two_or_past_the_last() {
        let p = [(4096, 1.0), (65536, 2.0)];
        assert_eq!(span(&p, 0), Span::First(1.0));
        assert_eq!(span(&p, 4096), Span::First(1.0));
        assert_eq!(span(&p, 4097), Span::Between((4096, 1.0), (65536, 2.0)));
        assert_eq!(span(&p, 65536), Span::Between((4096, 1.0), (65536, 2.0)));
        assert_eq!(span(&p, 65537), Span::Past((65536, 2.0)));
    }
}
