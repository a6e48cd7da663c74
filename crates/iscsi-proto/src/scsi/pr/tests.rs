use super::*;

type R = Reservations<&'static str>;

fn p(key: u64, sa_key: u64) -> OutParams {
    OutParams {
        key,
        sa_key,
        spec_i_pt: false,
        all_tg_pt: false,
        aptpl: false,
    }
}

fn keys(r: &R) -> Vec<u64> {
    let d = r.read(0, &|_| Vec::new()).unwrap();
    d[8..].chunks(8).map(be::u64).collect()
}

fn generation(r: &R) -> u32 {
    be::u32(&r.read(0, &|_| Vec::new()).unwrap()[0..4])
}

#[test]
fn register_reregister_unregister() {
    let mut r = R::default();
    r.out(&"a", out::REGISTER, 0, 0, &p(0, 7)).unwrap();
    assert_eq!(keys(&r), [7]);
    // REGISTER with the wrong current key conflicts; REGISTER AND IGNORE replaces.
    assert_eq!(
        r.out(&"a", out::REGISTER, 0, 0, &p(0, 8)),
        Err(Refusal::Conflict)
    );
    r.out(&"a", out::REGISTER_AND_IGNORE, 0, 0, &p(0, 9))
        .unwrap();
    assert_eq!(keys(&r), [9]);
    r.out(&"a", out::REGISTER, 0, 0, &p(9, 0)).unwrap();
    assert!(keys(&r).is_empty());
    assert_eq!(generation(&r), 3);
    // An unregistered nexus registering with a nonzero current key conflicts.
    assert_eq!(
        r.out(&"b", out::REGISTER, 0, 0, &p(5, 6)),
        Err(Refusal::Conflict)
    );
    // Unregistering when not registered is a no-op.
    r.out(&"b", out::REGISTER_AND_IGNORE, 0, 0, &p(0, 0))
        .unwrap();
    assert_eq!(generation(&r), 3);
}

#[test]
fn access_by_type() {
    // (type, registered other reads, writes, unregistered other reads, writes):
    // libiscsi's prout_reserve_access expectations, SPC-4 table 5.13.
    let table = [
        (kind::EXCLUSIVE_ACCESS, false, false, false, false),
        (kind::WRITE_EXCLUSIVE, true, false, true, false),
        (
            kind::EXCLUSIVE_ACCESS_REGISTRANTS_ONLY,
            true,
            true,
            false,
            false,
        ),
        (
            kind::WRITE_EXCLUSIVE_REGISTRANTS_ONLY,
            true,
            true,
            true,
            false,
        ),
        (
            kind::EXCLUSIVE_ACCESS_ALL_REGISTRANTS,
            true,
            true,
            false,
            false,
        ),
        (
            kind::WRITE_EXCLUSIVE_ALL_REGISTRANTS,
            true,
            true,
            true,
            false,
        ),
    ];
    for (k, rr, rw, ur, uw) in table {
        let mut r = R::default();
        r.out(&"a", out::REGISTER_AND_IGNORE, 0, 0, &p(0, 1))
            .unwrap();
        r.out(&"b", out::REGISTER_AND_IGNORE, 0, 0, &p(0, 2))
            .unwrap();
        r.out(&"a", out::RESERVE, 0, k, &p(1, 0)).unwrap();
        assert!(r.check(&"a", Access::Write).is_ok());
        assert_eq!(r.check(&"b", Access::Read).is_ok(), rr, "type {k}");
        assert_eq!(r.check(&"b", Access::Write).is_ok(), rw, "type {k}");
        r.out(&"b", out::REGISTER, 0, 0, &p(2, 0)).unwrap();
        assert_eq!(r.check(&"b", Access::Read).is_ok(), ur, "type {k}");
        assert_eq!(r.check(&"b", Access::Write).is_ok(), uw, "type {k}");
        assert!(r.check(&"b", Access::Always).is_ok());
        assert!(r.check(&"b", Access::Status).is_ok());
        r.out(&"a", out::RELEASE, 0, k, &p(1, 0)).unwrap();
        assert!(r.check(&"b", Access::Write).is_ok());
    }
}

#[test]
fn holder_unregistering_releases_with_attention_for_registrants_types() {
    let mut r = R::default();
    r.out(&"a", out::REGISTER_AND_IGNORE, 0, 0, &p(0, 1))
        .unwrap();
    r.out(&"b", out::REGISTER_AND_IGNORE, 0, 0, &p(0, 2))
        .unwrap();
    r.out(
        &"a",
        out::RESERVE,
        0,
        kind::WRITE_EXCLUSIVE_REGISTRANTS_ONLY,
        &p(1, 0),
    )
    .unwrap();
    let ua = r.out(&"a", out::REGISTER, 0, 0, &p(1, 0)).unwrap();
    assert_eq!(ua, [("b", sense::RESERVATIONS_RELEASED)]);
    assert_eq!(&r.read(1, &|_| Vec::new()).unwrap()[4..8], &[0, 0, 0, 0]);
    // All-registrants types survive the unregistration of one registrant.
    r.out(&"a", out::REGISTER_AND_IGNORE, 0, 0, &p(0, 1))
        .unwrap();
    r.out(
        &"a",
        out::RESERVE,
        0,
        kind::EXCLUSIVE_ACCESS_ALL_REGISTRANTS,
        &p(1, 0),
    )
    .unwrap();
    assert!(r
        .out(&"a", out::REGISTER, 0, 0, &p(1, 0))
        .unwrap()
        .is_empty());
    let rr = r.read(1, &|_| Vec::new()).unwrap();
    assert_eq!(
        (rr[7], rr[21]),
        (16, kind::EXCLUSIVE_ACCESS_ALL_REGISTRANTS)
    );
    assert_eq!(be::u64(&rr[8..16]), 0, "all-registrants key reads 0");
}

#[test]
fn clear_and_preempt() {
    let mut r = R::default();
    r.out(&"a", out::REGISTER_AND_IGNORE, 0, 0, &p(0, 1))
        .unwrap();
    r.out(&"b", out::REGISTER_AND_IGNORE, 0, 0, &p(0, 2))
        .unwrap();
    let g = generation(&r);
    let ua = r
        .out(&"b", out::PREEMPT, 0, kind::EXCLUSIVE_ACCESS, &p(2, 1))
        .unwrap();
    assert_eq!(ua, [("a", sense::REGISTRATIONS_PREEMPTED)]);
    assert_eq!((keys(&r), generation(&r)), (vec![2], g + 1));
    assert_eq!(
        r.out(&"b", out::PREEMPT, 0, kind::EXCLUSIVE_ACCESS, &p(2, 1)),
        Err(Refusal::Conflict),
        "no registration holds key 1 any more"
    );
    // Preempting the holder moves the reservation.
    r.out(&"a", out::REGISTER_AND_IGNORE, 0, 0, &p(0, 1))
        .unwrap();
    r.out(&"a", out::RESERVE, 0, kind::WRITE_EXCLUSIVE, &p(1, 0))
        .unwrap();
    r.out(&"b", out::PREEMPT, 0, kind::EXCLUSIVE_ACCESS, &p(2, 1))
        .unwrap();
    assert!(r.check(&"b", Access::Write).is_ok());
    assert!(r.check(&"a", Access::Read).is_err());
    let g = generation(&r);
    let ua = r.out(&"b", out::CLEAR, 0, 0, &p(2, 0)).unwrap();
    assert!(ua.is_empty());
    assert_eq!((keys(&r), generation(&r)), (vec![], g + 1));
    assert!(r.check(&"a", Access::Write).is_ok());
}

#[test]
fn legacy_reservations() {
    let mut r = R::default();
    r.reserve_legacy(&"a").unwrap();
    r.reserve_legacy(&"a").unwrap();
    assert_eq!(r.reserve_legacy(&"b"), Err(Refusal::Conflict));
    r.release_legacy(&"b").unwrap(); // a no-op
    assert_eq!(r.check(&"b", Access::Read), Err(Refusal::Conflict));
    assert!(r.check(&"b", Access::Always).is_ok());
    r.nexus_lost(&"a");
    r.reserve_legacy(&"b").unwrap();
    r.reset();
    // A persistent registration blocks RESERVE(6).
    r.out(&"a", out::REGISTER_AND_IGNORE, 0, 0, &p(0, 1))
        .unwrap();
    assert_eq!(r.reserve_legacy(&"b"), Err(Refusal::Conflict));
}

#[test]
fn refusals() {
    let mut r = R::default();
    let mut q = p(0, 1);
    q.aptpl = true;
    assert!(matches!(
        r.out(&"a", out::REGISTER, 0, 0, &q),
        Err(Refusal::Sense(_))
    ));
    r.out(&"a", out::REGISTER, 0, 0, &p(0, 1)).unwrap();
    assert!(matches!(
        r.out(&"a", out::RESERVE, 0, 2, &p(1, 0)),
        Err(Refusal::Sense(_))
    ));
    assert!(matches!(
        r.out(&"a", out::RESERVE, 1, 1, &p(1, 0)),
        Err(Refusal::Sense(_))
    ));
    assert!(matches!(
        r.out(&"a", out::REGISTER_AND_MOVE, 0, 1, &p(1, 0)),
        Err(Refusal::Sense(_))
    ));
    r.out(&"a", out::RESERVE, 0, 1, &p(1, 0)).unwrap();
    assert!(matches!(
        r.out(&"a", out::RELEASE, 0, 3, &p(1, 0)),
        Err(Refusal::Sense(_))
    ));
    assert!(r.read(4, &|_| Vec::new()).is_err());
    assert_eq!(r.read(2, &|_| Vec::new()).unwrap()[1], 8);
    let full = r.read(3, &|n| iscsi_transport_id(n)).unwrap();
    assert_eq!(full[8 + 12], 1, "R_HOLDER");
    assert_eq!(
        out_params(&[0; 23]).unwrap_err().asc,
        sense::PARAMETER_LIST_LENGTH_ERROR
    );
    assert_eq!(iscsi_transport_id("iqn.x,i,0x1").len(), 4 + 12);
}
