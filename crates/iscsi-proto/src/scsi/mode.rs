//! MODE SENSE(6)/(10) (SPC-4 §6.11/6.12): the mode parameter header, a block descriptor,
//! and the pages this target keeps: Caching (0x08: WCE), Control (0x0a), Informational
//! Exceptions Control (0x1c). Nothing is changeable (MODE SELECT is not implemented), so
//! the changeable values are all zero and defaults equal the current values.

use super::cdb::ModeSense;
use super::sense::{Sense, SAVING_PARAMETERS_NOT_SUPPORTED};
use super::Unit;

pub const PAGE_CACHING: u8 = 0x08;
pub const PAGE_CONTROL: u8 = 0x0a;
pub const PAGE_IEC: u8 = 0x1c;
pub const ALL_PAGES: u8 = 0x3f;

fn caching(u: &Unit, changeable: bool) -> Vec<u8> {
    let mut p = vec![0u8; 20];
    p[0] = PAGE_CACHING;
    p[1] = 18;
    if !changeable && u.write_cache {
        p[2] = 0x04; // WCE
    }
    p
}

fn control(changeable: bool) -> Vec<u8> {
    let mut p = vec![0u8; 12];
    p[0] = PAGE_CONTROL;
    p[1] = 10;
    if !changeable {
        p[3] = 0x10; // QUEUE ALGORITHM MODIFIER 1: unrestricted reordering
        p[5] = 0x40; // TAS: aborted tasks of other nexuses get TASK ABORTED
        p[8..10].copy_from_slice(&0xffffu16.to_be_bytes()); // BUSY TIMEOUT: unlimited
    }
    p
}

fn iec(_changeable: bool) -> Vec<u8> {
    let mut p = vec![0u8; 12];
    p[0] = PAGE_IEC;
    p[1] = 10;
    p
}

/// The MODE SENSE data for `m`.
pub fn mode_sense(u: &Unit, m: &ModeSense) -> Result<Vec<u8>, Sense> {
    if m.pc == 3 {
        return Err(Sense::new(SAVING_PARAMETERS_NOT_SUPPORTED));
    }
    let changeable = m.pc == 1;
    let pages: Vec<Vec<u8>> = match (m.page, m.subpage) {
        (PAGE_CACHING, 0) => vec![caching(u, changeable)],
        (PAGE_CONTROL, 0) => vec![control(changeable)],
        (PAGE_IEC, 0) => vec![iec(changeable)],
        (ALL_PAGES, 0) | (ALL_PAGES, 0xff) => {
            vec![caching(u, changeable), control(changeable), iec(changeable)]
        }
        (_, 0) | (_, 0xff) => return Err(Sense::cdb_field(2)),
        _ => return Err(Sense::cdb_field(3)),
    };
    // Device-specific parameter: WP, and DPOFUA (DPO and FUA are supported).
    let dsp = 0x10 | if u.read_only { 0x80 } else { 0 };
    let long = m.ten && m.llbaa;
    let mut bd = Vec::new();
    if !m.dbd {
        if long {
            bd.extend_from_slice(&u.blocks.to_be_bytes());
            bd.extend_from_slice(&[0; 4]);
            bd.extend_from_slice(&u.block_size.to_be_bytes());
        } else {
            let n = u32::try_from(u.blocks).unwrap_or(u32::MAX);
            bd.extend_from_slice(&n.to_be_bytes());
            bd.push(0);
            bd.extend_from_slice(&u.block_size.to_be_bytes()[1..4]);
        }
    }
    let body: usize = pages.iter().map(|p| p.len()).sum::<usize>() + bd.len();
    let mut d = Vec::with_capacity(8 + body);
    if m.ten {
        d.extend_from_slice(&((6 + body) as u16).to_be_bytes());
        d.extend_from_slice(&[0, dsp, if long { 1 } else { 0 }, 0]);
        d.extend_from_slice(&(bd.len() as u16).to_be_bytes());
    } else {
        d.extend_from_slice(&[(3 + body).min(255) as u8, 0, dsp, bd.len() as u8]);
    }
    d.extend_from_slice(&bd);
    for p in pages {
        d.extend_from_slice(&p);
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::super::inquiry::test_unit;
    use super::*;

    fn ms(ten: bool, page: u8, pc: u8, dbd: bool) -> ModeSense {
        ModeSense {
            ten,
            dbd,
            llbaa: false,
            pc,
            page,
            subpage: 0,
            alloc: 255,
        }
    }

    #[test]
    fn headers_descriptors_and_pages() {
        let u = test_unit();
        let d = mode_sense(&u, &ms(false, ALL_PAGES, 0, false)).unwrap();
        assert_eq!(d[0] as usize, d.len() - 1);
        assert_eq!((d[2], d[3]), (0x10, 8));
        assert_eq!(&d[4..8], &(1u32 << 20).to_be_bytes());
        assert_eq!(d[12], PAGE_CACHING);
        assert_eq!(d[14] & 0x04, 0x04, "WCE");
        let d = mode_sense(&u, &ms(true, PAGE_CONTROL, 0, true)).unwrap();
        assert_eq!(u16::from_be_bytes([d[0], d[1]]) as usize, d.len() - 2);
        assert_eq!(&d[6..8], &[0, 0]);
        assert_eq!(d[8], PAGE_CONTROL);
        let c = mode_sense(&u, &ms(false, PAGE_CACHING, 1, true)).unwrap();
        assert_eq!(c[6], 0, "nothing changeable");
        assert!(mode_sense(&u, &ms(false, 0x19, 0, true)).is_err());
        assert!(mode_sense(&u, &ms(false, PAGE_CACHING, 3, true)).is_err());
    }
}
