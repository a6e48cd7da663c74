//! A minimal iSCSI initiator over `iscsi_proto`'s encoders: login (one step, or a
//! stage at a time for CHAP), SCSI commands with immediate, unsolicited and R2T-driven
//! Data-Out, Data-In collection, NOP. For tests and tools that need a client whose every
//! PDU they control (libiscsi and the kernel are the real initiators).

use std::collections::HashMap;
use std::net::SocketAddr;

use iscsi_proto::frame::{next_pdu, Digests, BHS_LEN};
use iscsi_proto::pdu::initiator::{self, Reply};
use iscsi_proto::pdu::{op, DataOut, Login, NopOut, ScsiCommand, RESERVED_TAG};
use iscsi_proto::text;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A target PDU, owned.
#[derive(Debug, Clone)]
pub struct Pdu {
    pub bhs: [u8; BHS_LEN],
    pub data: Vec<u8>,
}

impl Pdu {
    pub fn reply(&self) -> Reply<'_> {
        Reply(iscsi_proto::frame::RawPdu {
            bhs: &self.bhs,
            ahs: &[],
            data: &self.data,
        })
    }
    pub fn opcode(&self) -> u8 {
        self.bhs[0] & 0x3f
    }
}

/// What a SCSI command came back with.
#[derive(Debug, Default)]
pub struct Resp {
    pub status: u8,
    pub sense: Vec<u8>,
    pub data: Vec<u8>,
    /// The response's flags byte (residual bits) and residual count.
    pub flags: u8,
    pub residual: u32,
    pub r2ts: usize,
}

impl Resp {
    /// (sense key, ASC, ASCQ) of fixed-format sense data.
    pub fn asc(&self) -> (u8, u8, u8) {
        if self.sense.len() < 14 {
            return (0, 0, 0);
        }
        (self.sense[2] & 0x0f, self.sense[12], self.sense[13])
    }
}

pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
    pub digests: Digests,
    pub cmdsn: u32,
    pub exp_statsn: u32,
    pub itt: u32,
    pub isid: [u8; 6],
    pub tsih: u16,
    pub cid: u16,
    pub initiator: String,
    /// The target's answers and declarations at login.
    pub keys: HashMap<String, String>,
    pub max_cmdsn: u32,
}

fn pairs(data: &[u8]) -> HashMap<String, String> {
    text::parse(data)
        .expect("target text parses")
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Client {
    pub async fn connect(addr: SocketAddr, initiator: &str) -> std::io::Result<Client> {
        Ok(Client {
            stream: TcpStream::connect(addr).await?,
            buf: Vec::new(),
            digests: Digests::default(),
            cmdsn: 1,
            exp_statsn: 0,
            itt: 0,
            isid: [0x80, 0, 0, 0, 0, 1],
            tsih: 0,
            cid: 1,
            initiator: initiator.to_string(),
            keys: HashMap::new(),
            max_cmdsn: 0,
        })
    }

    pub async fn send(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(b).await
    }

    /// The next PDU, or `None` when the target closed the connection.
    pub async fn recv(&mut self) -> Option<Pdu> {
        loop {
            if let Ok(Some((p, used))) = next_pdu(&self.buf, self.digests, 1 << 24) {
                let pdu = Pdu {
                    bhs: *p.bhs,
                    data: p.data.to_vec(),
                };
                self.buf.drain(..used);
                let r = pdu.reply();
                if r.opcode() != op::R2T && (r.opcode() != op::DATA_IN || r.flags() & 1 != 0) {
                    self.exp_statsn = r.statsn().wrapping_add(1);
                }
                if r.opcode() != op::LOGIN_RSP {
                    self.max_cmdsn = r.max_cmdsn();
                }
                return Some(pdu);
            }
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    fn next_itt(&mut self) -> u32 {
        self.itt += 1;
        self.itt
    }

    /// One login request; returns the response.
    pub async fn login_pdu(
        &mut self,
        csg: u8,
        nsg: u8,
        transit: bool,
        keys: &[(&str, &str)],
    ) -> Option<Pdu> {
        let mut data = Vec::new();
        for (k, v) in keys {
            text::push(&mut data, k, v);
        }
        let itt = self.itt;
        let mut out = Vec::new();
        initiator::login(
            &mut out,
            &Login {
                transit,
                cont: false,
                csg,
                nsg,
                version_max: 0,
                version_min: 0,
                isid: self.isid,
                tsih: self.tsih,
                itt,
                cid: self.cid,
                cmdsn: self.cmdsn,
                exp_statsn: self.exp_statsn,
                data: &data,
            },
        );
        self.send(&out).await.ok()?;
        self.recv().await
    }

    /// A normal-session login straight to the full feature phase with `extra` keys;
    /// returns the status class and detail of the last response ((0xff, 0xff) if the
    /// connection closed).
    pub async fn login(&mut self, target: &str, extra: &[(&str, &str)]) -> (u8, u8) {
        let initiator = self.initiator.clone();
        let mut keys = vec![
            ("InitiatorName", initiator.as_str()),
            ("TargetName", target),
            ("SessionType", "Normal"),
        ];
        keys.extend_from_slice(extra);
        match self.login_pdu(1, 3, true, &keys).await {
            Some(r) => self.finish_login(&r),
            None => (0xff, 0xff),
        }
    }

    pub fn finish_login(&mut self, r: &Pdu) -> (u8, u8) {
        let rep = r.reply();
        let st = rep.login_status();
        self.keys.extend(pairs(&r.data));
        if st == (0, 0) && rep.stages().1 == 3 && rep.flags() & 0x80 != 0 {
            self.tsih = rep.tsih();
            self.max_cmdsn = rep.max_cmdsn();
            self.digests = Digests {
                header: self.keys.get("HeaderDigest").is_some_and(|v| v == "CRC32C"),
                data: self.keys.get("DataDigest").is_some_and(|v| v == "CRC32C"),
            };
        }
        st
    }

    fn key_num(&self, k: &str, default: u32) -> u32 {
        self.keys
            .get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    fn key_yes(&self, k: &str, default: bool) -> bool {
        self.keys.get(k).map(|v| v == "Yes").unwrap_or(default)
    }

    /// Sends a SCSI command (without waiting); returns its ITT.
    pub async fn send_command(
        &mut self,
        lun: u16,
        cdb: &[u8],
        edtl: u32,
        write: &[u8],
        read: bool,
    ) -> std::io::Result<u32> {
        let itt = self.next_itt();
        let mut c = [0u8; 16];
        c[..cdb.len()].copy_from_slice(cdb);
        let imm_ok = self.key_yes("ImmediateData", true);
        let unsol_ok = !self.key_yes("InitialR2T", true);
        let first_burst = self.key_num("FirstBurstLength", 65536) as usize;
        let mrdsl = self.key_num("MaxRecvDataSegmentLength", 8192) as usize;
        let imm = if imm_ok {
            write.len().min(first_burst).min(mrdsl)
        } else {
            0
        };
        let unsol_end = if unsol_ok {
            write.len().min(first_burst)
        } else {
            imm
        };
        let mut out = Vec::new();
        initiator::scsi_command(
            &mut out,
            self.digests,
            &ScsiCommand {
                immediate: false,
                final_: unsol_end == imm,
                read,
                write: !write.is_empty() || (edtl > 0 && !read),
                attr: 1,
                lun: iscsi_proto::scsi::lun::encode(lun),
                itt,
                edtl,
                cmdsn: self.cmdsn,
                exp_statsn: self.exp_statsn,
                cdb: c,
                ext_cdb: &[],
                bidi_read_len: None,
                data: &write[..imm],
            },
        );
        self.cmdsn = self.cmdsn.wrapping_add(1);
        self.data_outs(&mut out, lun, itt, RESERVED_TAG, write, imm..unsol_end);
        self.send(&out).await?;
        Ok(itt)
    }

    /// Appends to `out` the Data-Out PDUs that carry `write[range]` for task `itt` (`ttt`:
    /// the R2T's tag, or the reserved tag for unsolicited data) in pieces of at most the
    /// target's MaxRecvDataSegmentLength: DataSN from 0, F on the last.
    fn data_outs(
        &self,
        out: &mut Vec<u8>,
        lun: u16,
        itt: u32,
        ttt: u32,
        write: &[u8],
        range: std::ops::Range<usize>,
    ) {
        let mrdsl = self.key_num("MaxRecvDataSegmentLength", 8192) as usize;
        let mut at = range.start;
        let mut datasn = 0;
        while at < range.end {
            let n = (range.end - at).min(mrdsl);
            initiator::data_out(
                out,
                self.digests,
                &DataOut {
                    final_: at + n == range.end,
                    lun: iscsi_proto::scsi::lun::encode(lun),
                    itt,
                    ttt,
                    exp_statsn: self.exp_statsn,
                    datasn,
                    offset: at as u32,
                    data: &write[at..at + n],
                },
            );
            datasn += 1;
            at += n;
        }
    }

    /// Answers R2Ts and collects Data-In until the command's status arrives.
    pub async fn complete(&mut self, itt: u32, lun: u16, write: &[u8]) -> Option<Resp> {
        let mut resp = Resp::default();
        loop {
            let p = self.recv().await?;
            let r = p.reply();
            assert_eq!(r.itt(), itt, "a PDU for another task: {:?}", p.bhs);
            match r.opcode() {
                op::R2T => {
                    resp.r2ts += 1;
                    let (off, len) = (r.offset() as usize, r.word44() as usize);
                    let mut out = Vec::new();
                    self.data_outs(&mut out, lun, itt, r.ttt(), write, off..off + len);
                    self.send(&out).await.ok()?;
                }
                op::DATA_IN => {
                    assert_eq!(r.offset() as usize, resp.data.len(), "Data-In in order");
                    resp.data.extend_from_slice(r.data());
                    if r.flags() & 1 != 0 {
                        resp.status = r.status();
                        resp.flags = r.flags();
                        resp.residual = r.word44();
                        return Some(resp);
                    }
                }
                op::SCSI_RSP => {
                    resp.status = r.status();
                    resp.sense = r.sense().to_vec();
                    resp.flags = r.flags();
                    resp.residual = r.word44();
                    return Some(resp);
                }
                other => panic!("unexpected opcode 0x{other:02x} for task {itt}"),
            }
        }
    }

    /// A whole command: send, answer R2Ts, collect (`None`: the connection closed).
    pub async fn try_command(
        &mut self,
        lun: u16,
        cdb: &[u8],
        edtl: u32,
        write: &[u8],
    ) -> Option<Resp> {
        let read = write.is_empty() && edtl > 0;
        let itt = self.send_command(lun, cdb, edtl, write, read).await.ok()?;
        self.complete(itt, lun, write).await
    }

    /// [`Client::try_command`] for tests: panics if the connection closed.
    pub async fn command(&mut self, lun: u16, cdb: &[u8], edtl: u32, write: &[u8]) -> Resp {
        self.try_command(lun, cdb, edtl, write)
            .await
            .unwrap_or_else(|| panic!("no answer to CDB {cdb:02x?}: the connection closed"))
    }

    pub async fn nop(&mut self) -> Option<Pdu> {
        let itt = self.next_itt();
        let mut out = Vec::new();
        initiator::nop_out(
            &mut out,
            self.digests,
            &NopOut {
                immediate: false,
                lun: 0,
                itt,
                ttt: RESERVED_TAG,
                cmdsn: self.cmdsn,
                exp_statsn: self.exp_statsn,
                data: b"ping",
            },
        );
        self.cmdsn = self.cmdsn.wrapping_add(1);
        self.send(&out).await.ok()?;
        self.recv().await
    }
}

pub fn read10(lba: u32, blocks: u16) -> Vec<u8> {
    let mut c = vec![0x28, 0];
    c.extend_from_slice(&lba.to_be_bytes());
    c.push(0);
    c.extend_from_slice(&blocks.to_be_bytes());
    c.push(0);
    c
}

pub fn write10(lba: u32, blocks: u16, fua: bool) -> Vec<u8> {
    let mut c = read10(lba, blocks);
    c[0] = 0x2a;
    if fua {
        c[1] = 0x08;
    }
    c
}
