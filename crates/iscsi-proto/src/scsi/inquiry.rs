//! INQUIRY data (SPC-4 §6.6): the standard page and the vital product data pages a block
//! target keeps: 0x00 supported pages, 0x80 unit serial number, 0x83 device
//! identification, 0xB0 block limits, 0xB1 block device characteristics, 0xB2 logical
//! block provisioning (SBC-3 §6.6).

use super::sense::Sense;
use super::{ascii_field, Unit};

pub const VPD_SUPPORTED: u8 = 0x00;
pub const VPD_SERIAL: u8 = 0x80;
pub const VPD_DEVICE_ID: u8 = 0x83;
pub const VPD_BLOCK_LIMITS: u8 = 0xb0;
pub const VPD_BLOCK_CHARACTERISTICS: u8 = 0xb1;
pub const VPD_PROVISIONING: u8 = 0xb2;

/// Version descriptors claimed: SAM-5, SPC-4, SBC-3, iSCSI.
const VERSION_DESCRIPTORS: [u16; 4] = [0x00a0, 0x0460, 0x04c0, 0x0960];

/// Standard INQUIRY data (96 bytes): a direct-access block device, SPC-4, command
/// queueing, hierarchical LUN addressing.
pub fn standard(u: &Unit) -> Vec<u8> {
    let mut d = vec![0u8; 96];
    d[0] = 0x00; // peripheral qualifier 0, direct access block device
    d[1] = 0x00; // not removable
    d[2] = 0x06; // SPC-4
    d[3] = 0x10 | 0x02; // HISUP, response data format 2
    d[4] = (d.len() - 5) as u8;
    d[7] = 0x02; // CMDQUE
    ascii_field(&mut d[8..16], &u.vendor);
    ascii_field(&mut d[16..32], &u.product);
    ascii_field(&mut d[32..36], &u.revision);
    for (i, v) in VERSION_DESCRIPTORS.iter().enumerate() {
        d[58 + 2 * i..60 + 2 * i].copy_from_slice(&v.to_be_bytes());
    }
    d
}

/// The VPD pages this target supports, in ascending order.
pub fn supported_pages(u: &Unit) -> Vec<u8> {
    let mut p = vec![
        VPD_SUPPORTED,
        VPD_SERIAL,
        VPD_DEVICE_ID,
        VPD_BLOCK_LIMITS,
        VPD_BLOCK_CHARACTERISTICS,
    ];
    if u.thin {
        p.push(VPD_PROVISIONING);
    }
    p
}

fn page(code: u8, body: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(4 + body.len());
    d.extend_from_slice(&[0, code]);
    d.extend_from_slice(&(body.len() as u16).to_be_bytes());
    d.extend_from_slice(body);
    d
}

/// A VPD page, or INVALID FIELD IN CDB (byte 2) for a page this target does not keep.
pub fn vpd(u: &Unit, code: u8) -> Result<Vec<u8>, Sense> {
    if !supported_pages(u).contains(&code) {
        return Err(Sense::cdb_field(2));
    }
    Ok(match code {
        VPD_SUPPORTED => page(code, &supported_pages(u)),
        VPD_SERIAL => page(code, u.serial.as_bytes()),
        VPD_DEVICE_ID => page(code, &device_id(u)),
        VPD_BLOCK_LIMITS => page(code, &block_limits(u)),
        VPD_BLOCK_CHARACTERISTICS => {
            let mut b = [0u8; 0x3c];
            b[1] = 1; // MEDIUM ROTATION RATE: non-rotating medium
            page(code, &b)
        }
        _ => {
            let mut b = [0u8; 4];
            // LBPU (UNMAP), LBPWS (WRITE SAME(16) UNMAP), LBPWS10, LBPRZ.
            b[1] = 0x80 | 0x40 | 0x20 | if u.lbprz { 0x04 } else { 0 };
            b[2] = 0x02; // provisioning type: thin
            page(code, &b)
        }
    })
}

/// Device identification descriptors: an NAA name for the logical unit (Linux's `wwn-`
/// name), a T10 vendor ID with the serial number, and the relative target port.
fn device_id(u: &Unit) -> Vec<u8> {
    let mut d = Vec::new();
    // NAA 3 (locally assigned), binary, associated with the logical unit.
    d.extend_from_slice(&[0x01, 0x03, 0x00, 0x08]);
    d.extend_from_slice(&((3u64 << 60) | (u.naa_id & ((1 << 60) - 1))).to_be_bytes());
    // T10 vendor ID, ASCII: vendor (8 bytes) then the serial number.
    let mut t10 = [b' '; 8].to_vec();
    ascii_field(&mut t10, &u.vendor);
    t10.extend_from_slice(u.serial.as_bytes());
    d.extend_from_slice(&[0x02, 0x01, 0x00, t10.len().min(255) as u8]);
    d.extend_from_slice(&t10[..t10.len().min(255)]);
    // Relative target port 1, binary, iSCSI (protocol identifier 5, PIV), target port.
    d.extend_from_slice(&[0x51, 0x94, 0x00, 0x04, 0, 0, 0, 1]);
    d
}

fn block_limits(u: &Unit) -> [u8; 0x3c] {
    let l = u.limits;
    let mut b = [0u8; 0x3c];
    // b[0] is page byte 4: WSNZ=0 (WRITE SAME of 0 blocks means "to the end").
    b[1] = l.max_compare_and_write;
    b[2..4].copy_from_slice(&(u.lbppb() as u16).to_be_bytes());
    b[4..8].copy_from_slice(&l.max_transfer.to_be_bytes());
    b[8..12].copy_from_slice(&l.optimal_transfer.to_be_bytes());
    b[12..16].copy_from_slice(&l.max_transfer.to_be_bytes()); // maximum prefetch length
    if u.thin {
        b[16..20].copy_from_slice(&l.max_unmap_lba_count.to_be_bytes());
        b[20..24].copy_from_slice(&l.max_unmap_descriptors.to_be_bytes());
        b[24..28].copy_from_slice(&u.lbppb().to_be_bytes()); // optimal unmap granularity
        b[28..32].copy_from_slice(&0x8000_0000u32.to_be_bytes()); // UGAVALID, alignment 0
    }
    b[32..40].copy_from_slice(&l.max_write_same.to_be_bytes());
    b
}

#[cfg(test)]
pub(crate) fn test_unit() -> Unit {
    Unit {
        vendor: "QOSLAB".into(),
        product: "LUN".into(),
        revision: "0001".into(),
        serial: "qoslab0001".into(),
        naa_id: 0x1234,
        block_size: 512,
        blocks: 1 << 20,
        lbppbe: 3,
        thin: true,
        lbprz: true,
        read_only: false,
        write_cache: true,
        limits: super::Limits {
            max_transfer: 65536,
            optimal_transfer: 2048,
            max_compare_and_write: 255,
            max_unmap_lba_count: 1 << 20,
            max_unmap_descriptors: 256,
            max_write_same: 65535,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_inquiry_fields() {
        let d = standard(&test_unit());
        assert_eq!(d.len(), 96);
        assert_eq!((d[0], d[2], d[3] & 0x0f, d[4] as usize), (0, 6, 2, 91));
        assert_eq!(&d[8..16], b"QOSLAB  ");
        assert_eq!(&d[16..32], b"LUN             ");
        assert_eq!(&d[60..62], &[0x04, 0x60]);
    }

    #[test]
    fn vpd_pages() {
        let u = test_unit();
        let sup = vpd(&u, 0).unwrap();
        assert_eq!(&sup[4..], &[0x00, 0x80, 0x83, 0xb0, 0xb1, 0xb2]);
        for p in &sup[4..] {
            let v = vpd(&u, *p).unwrap();
            assert_eq!(v[1], *p);
            assert_eq!(u16::from_be_bytes([v[2], v[3]]) as usize, v.len() - 4);
        }
        let bl = vpd(&u, VPD_BLOCK_LIMITS).unwrap();
        assert_eq!(bl.len(), 64);
        assert_eq!(bl[3], 0x3c);
        let id = vpd(&u, VPD_DEVICE_ID).unwrap();
        assert_eq!(&id[4..8], &[0x01, 0x03, 0x00, 0x08]);
        assert_eq!(id[8] >> 4, 3, "NAA 3");
        assert_eq!(vpd(&u, 0x89).unwrap_err(), Sense::cdb_field(2));
        let fat = Unit { thin: false, ..u };
        assert!(vpd(&fat, VPD_PROVISIONING).is_err());
    }
}
