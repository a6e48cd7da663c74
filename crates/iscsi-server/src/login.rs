//! The login phase of one connection (RFC 7143 §6): security negotiation (AuthMethod,
//! CHAP), operational negotiation, then the leading login creates a session (or a
//! later one joins its session by TSIH). A state machine over decoded Login PDUs: each
//! step returns the response bytes and whether login goes on, failed, or is done.

use std::net::SocketAddr;
use std::sync::Arc;

use iscsi_proto::chap;
use iscsi_proto::negotiate::{Negotiation, Params};
use iscsi_proto::pdu::target::{login_response, login_status as st, LoginResponse, Seq};
use iscsi_proto::pdu::Login;
use iscsi_proto::text::{self, MAX_TEXT, REJECT};

use crate::session::{Session, Sessions};
use crate::target::{valid_iscsi_name, Access, Auth, Target};
use crate::Config;

/// A login refused: the status class and detail, and why (for the log).
type Refused = ((u8, u8), String);

const SECURITY: u8 = 0;
const OPERATIONAL: u8 = 1;
const FULL_FEATURE: u8 = 3;

/// A finished login: the connection's session and parameters.
pub struct Established {
    pub session: Arc<Session>,
    pub cid: u16,
    /// Digests and MaxRecvDataSegmentLength of this connection; session-wide values
    /// come from the session.
    pub conn: Params,
    /// The StatSN of the next response on this connection.
    pub statsn: u32,
}

/// What to do after a login PDU.
pub enum Step {
    /// Send the bytes; wait for the next Login PDU.
    Continue(Vec<u8>),
    /// Send the bytes (a failure response) and close.
    Fail(Vec<u8>, String),
    /// Send the bytes; the connection is in the full feature phase.
    Done(Vec<u8>, Established),
}

enum AuthState {
    /// Nothing agreed yet.
    Pending,
    /// CHAP chosen; waiting for CHAP_A.
    ChapChosen,
    /// Challenge (identifier, bytes) sent; waiting for CHAP_N and CHAP_R.
    Challenged(u8, [u8; 16]),
    Passed,
}

/// One connection's login.
pub struct LoginState {
    target: Arc<dyn Target>,
    sessions: Arc<Sessions>,
    config: Arc<Config>,
    kill: tokio::sync::watch::Sender<bool>,
    stage: u8,
    first: bool,
    initiator: String,
    isid: [u8; 6],
    tsih: u16,
    cid: u16,
    cmdsn: u32,
    discovery: bool,
    joining: Option<Arc<Session>>,
    neg: Option<Negotiation>,
    /// The CHAP the initiator must pass (the target's answer for this initiator).
    required: Option<Auth>,
    auth: AuthState,
    text: Vec<u8>,
    statsn: u32,
    pub peer: SocketAddr,
}

/// Random bytes from the OS (CHAP challenges, initial StatSN).
fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    if getrandom::fill(&mut b).is_err() {
        // No OS randomness is a broken host; a time-derived value keeps CHAP usable
        // but weaker, and is logged.
        tracing::warn!("iscsi: no OS randomness; CHAP challenge from the clock");
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (i, x) in b.iter_mut().enumerate() {
            *x = (t >> ((i % 16) * 8)) as u8;
        }
    }
    b
}

impl LoginState {
    pub fn new(
        target: Arc<dyn Target>,
        sessions: Arc<Sessions>,
        config: Arc<Config>,
        kill: tokio::sync::watch::Sender<bool>,
        peer: SocketAddr,
    ) -> LoginState {
        LoginState {
            target,
            sessions,
            config,
            kill,
            stage: SECURITY,
            first: true,
            initiator: String::new(),
            isid: [0; 6],
            tsih: 0,
            cid: 0,
            cmdsn: 0,
            discovery: false,
            joining: None,
            neg: None,
            required: None,
            auth: AuthState::Pending,
            text: Vec::new(),
            statsn: u32::from_be_bytes(random::<4>()) & 0x0fff_ffff,
            peer,
        }
    }

    fn seq(&self) -> Seq {
        match &self.joining {
            Some(s) => s.seq(self.statsn),
            None => Seq {
                statsn: self.statsn,
                exp_cmdsn: self.cmdsn,
                max_cmdsn: self.cmdsn.wrapping_add(self.config.cmd_window.max(1) - 1),
            },
        }
    }

    fn respond(
        &mut self,
        req: &Login<'_>,
        transit: bool,
        nsg: u8,
        tsih: u16,
        status: (u8, u8),
        data: &[u8],
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + data.len());
        login_response(
            &mut out,
            &LoginResponse {
                transit,
                cont: false,
                csg: self.stage,
                nsg: if transit { nsg } else { 0 },
                isid: req.isid,
                tsih,
                itt: req.itt,
                status,
                seq: self.seq(),
            },
            data,
        );
        self.statsn = self.statsn.wrapping_add(1);
        out
    }

    fn fail(&mut self, req: &Login<'_>, status: (u8, u8), why: String) -> Step {
        let out = self.respond(req, false, 0, 0, status, &[]);
        Step::Fail(out, why)
    }

    /// Handles one Login PDU.
    pub fn step(&mut self, req: &Login<'_>) -> Step {
        if self.first && (req.version_min > 0) {
            return self.fail(
                req,
                st::UNSUPPORTED_VERSION,
                format!("version-min {}", req.version_min),
            );
        }
        if self.text.len() + req.data.len() > MAX_TEXT {
            return self.fail(
                req,
                st::OUT_OF_RESOURCES,
                format!("login text over {MAX_TEXT} bytes"),
            );
        }
        self.text.extend_from_slice(req.data);
        if req.cont {
            // More text follows: acknowledge with an empty response (RFC 7143 §6.3).
            let out = self.respond(req, false, 0, 0, st::SUCCESS, &[]);
            return Step::Continue(out);
        }
        let text = std::mem::take(&mut self.text);
        let pairs = match text::parse(&text) {
            Ok(p) => p,
            Err(e) => return self.fail(req, st::INITIATOR_ERROR, e.to_string()),
        };
        if req.csg == 2 || req.csg == FULL_FEATURE || req.csg < self.stage {
            return self.fail(
                req,
                st::INITIATOR_ERROR,
                format!("login stage {} after {}", req.csg, self.stage),
            );
        }
        if req.transit && (req.nsg == 2 || req.nsg <= req.csg) {
            return self.fail(
                req,
                st::INITIATOR_ERROR,
                format!("transit from stage {} to {}", req.csg, req.nsg),
            );
        }
        if self.first {
            if let Err((status, why)) = self.first_pdu(req, &pairs) {
                return self.fail(req, status, why);
            }
        }
        if req.csg == OPERATIONAL && self.stage == SECURITY {
            // Skipping (or leaving) the security stage requires authentication passed.
            if let Err(why) = self.auth_needed_done() {
                return self.fail(req, st::AUTH_FAILED, why);
            }
            self.stage = OPERATIONAL;
        }
        let mut out_text = Vec::new();
        for (k, v) in &pairs {
            match self.key(k, v, &pairs, &mut out_text) {
                Ok(()) => {}
                Err((status, why)) => return self.fail(req, status, why),
            }
        }
        if self.stage == OPERATIONAL {
            let neg = self
                .neg
                .as_mut()
                .expect("negotiation exists after the first PDU");
            for (k, v) in neg.declarations() {
                text::push(&mut out_text, k, &v);
            }
        }
        if self.first && !self.discovery {
            text::push(&mut out_text, "TargetPortalGroupTag", "1");
            if let Some(alias) = self.target.alias() {
                text::push(&mut out_text, "TargetAlias", &alias);
            }
        }
        self.first = false;
        let mut transit = req.transit;
        if transit && self.stage == SECURITY {
            if let Err(why) = self.auth_needed_done() {
                if matches!(self.auth, AuthState::Pending) {
                    return self.fail(req, st::AUTH_FAILED, why);
                }
                // The CHAP exchange is still going: stay in the security stage.
                transit = false;
            }
        }
        if !transit {
            let out = self.respond(req, false, 0, 0, st::SUCCESS, &out_text);
            return Step::Continue(out);
        }
        if req.nsg != FULL_FEATURE {
            let out = self.respond(req, true, req.nsg, 0, st::SUCCESS, &out_text);
            self.stage = req.nsg;
            return Step::Continue(out);
        }
        match self.establish() {
            Ok((session, conn)) => {
                let tsih = session.tsih;
                let out = self.respond(req, true, FULL_FEATURE, tsih, st::SUCCESS, &out_text);
                Step::Done(
                    out,
                    Established {
                        session,
                        cid: self.cid,
                        conn,
                        statsn: self.statsn,
                    },
                )
            }
            Err((status, why)) => self.fail(req, status, why),
        }
    }

    fn first_pdu(&mut self, req: &Login<'_>, pairs: &[(&str, &str)]) -> Result<(), Refused> {
        let get = |k: &str| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let Some(initiator) = get("InitiatorName") else {
            return Err((st::MISSING_PARAMETER, "no InitiatorName".into()));
        };
        if !valid_iscsi_name(initiator) {
            return Err((
                st::INITIATOR_ERROR,
                format!("InitiatorName {initiator:?} is not an iSCSI name"),
            ));
        }
        self.discovery = match get("SessionType").unwrap_or("Normal") {
            "Normal" => false,
            "Discovery" => true,
            other => {
                return Err((
                    st::SESSION_TYPE_UNSUPPORTED,
                    format!("SessionType {other:?}"),
                ))
            }
        };
        if !self.discovery {
            match get("TargetName") {
                None => return Err((st::MISSING_PARAMETER, "no TargetName".into())),
                Some(t) if !t.eq_ignore_ascii_case(&self.target.name()) => {
                    return Err((
                        st::NOT_FOUND,
                        format!("TargetName {t:?} is not served here"),
                    ))
                }
                Some(_) => {}
            }
        }
        self.initiator = initiator.to_string();
        self.isid = req.isid;
        self.tsih = req.tsih;
        self.cid = req.cid;
        self.cmdsn = req.cmdsn;
        if req.tsih != 0 {
            let s = self.sessions.get(req.tsih).filter(|s| {
                s.isid == req.isid
                    && s.initiator.eq_ignore_ascii_case(initiator)
                    && s.discovery == self.discovery
            });
            match s {
                Some(s) => self.joining = Some(s),
                None => {
                    return Err((
                        st::SESSION_DOES_NOT_EXIST,
                        format!("no session with TSIH {}", req.tsih),
                    ))
                }
            }
        }
        self.required = match self.target.access(initiator) {
            Access::Open => None,
            Access::Chap(a) => Some(a),
            Access::Deny => {
                return Err((
                    st::NOT_AUTHORIZED,
                    format!("initiator {initiator:?} is denied (its credentials say deny)"),
                ))
            }
        };
        self.neg = Some(Negotiation::new(self.config.limits, self.discovery));
        Ok(())
    }

    /// Whether authentication allows leaving the security stage.
    fn auth_needed_done(&self) -> Result<(), String> {
        match (&self.auth, &self.required) {
            (AuthState::Passed, _) | (AuthState::Pending, None) => Ok(()),
            _ => Err("CHAP authentication required".into()),
        }
    }

    fn key(
        &mut self,
        k: &str,
        v: &str,
        pairs: &[(&str, &str)],
        out: &mut Vec<u8>,
    ) -> Result<(), Refused> {
        match k {
            "InitiatorName" | "SessionType" | "TargetName" | "InitiatorAlias" => Ok(()),
            "AuthMethod" => {
                if self.stage != SECURITY {
                    text::push(out, k, text::IRRELEVANT);
                    return Ok(());
                }
                let offered: Vec<&str> = v.split(',').collect();
                if self.required.is_some() {
                    if !offered.contains(&"CHAP") {
                        return Err((st::AUTH_FAILED, format!("CHAP required, AuthMethod={v}")));
                    }
                    text::push(out, k, "CHAP");
                    self.auth = AuthState::ChapChosen;
                } else if offered.contains(&"None") {
                    text::push(out, k, "None");
                    self.auth = AuthState::Passed;
                } else {
                    text::push(out, k, REJECT);
                    return Err((
                        st::AUTH_FAILED,
                        format!("AuthMethod={v} but no CHAP secret is configured"),
                    ));
                }
                Ok(())
            }
            "CHAP_A" => {
                if !matches!(self.auth, AuthState::ChapChosen) {
                    return Err((st::INITIATOR_ERROR, "CHAP_A before AuthMethod=CHAP".into()));
                }
                if !chap::offers_md5(v) {
                    return Err((
                        st::AUTH_FAILED,
                        format!("CHAP_A={v}: only 5 (MD5) is supported"),
                    ));
                }
                let id = random::<1>()[0];
                let challenge = random::<16>();
                text::push(out, "CHAP_A", chap::MD5);
                text::push(out, "CHAP_I", &id.to_string());
                text::push(out, "CHAP_C", &chap::encode_hex(&challenge));
                self.auth = AuthState::Challenged(id, challenge);
                Ok(())
            }
            "CHAP_N" | "CHAP_I" | "CHAP_C" => Ok(()), // read with CHAP_R
            "CHAP_R" => self.chap_response(v, pairs, out),
            _ => {
                let neg = self
                    .neg
                    .as_mut()
                    .expect("negotiation exists after the first PDU");
                match neg.offer(k, v) {
                    Ok(Some(answer)) => {
                        text::push(out, k, &answer);
                        Ok(())
                    }
                    Ok(None) => Ok(()),
                    Err(e) => Err((st::INITIATOR_ERROR, e.to_string())),
                }
            }
        }
    }

    fn chap_response(
        &mut self,
        r: &str,
        pairs: &[(&str, &str)],
        out: &mut Vec<u8>,
    ) -> Result<(), Refused> {
        let (AuthState::Challenged(id, challenge), Some(a)) = (&self.auth, &self.required) else {
            return Err((st::INITIATOR_ERROR, "CHAP_R before a challenge".into()));
        };
        let (id, challenge, a) = (*id, *challenge, a.clone());
        let get = |k: &str| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let fail = |why: &str| Err((st::AUTH_FAILED, why.to_string()));
        let got = chap::decode_binary(r).map_err(|e| (st::AUTH_FAILED, e.to_string()))?;
        if get("CHAP_N") != Some(a.initiator.user.as_str()) {
            return fail("CHAP_N does not name the configured user");
        }
        if !chap::verify(id, &a.initiator.secret, &challenge, &got) {
            return fail("CHAP response does not match the secret");
        }
        if let (Some(i), Some(c)) = (get("CHAP_I"), get("CHAP_C")) {
            let Some(t) = &a.target else {
                return fail("mutual CHAP asked for but no target secret is configured");
            };
            let Ok(their_id) = i.parse::<u8>() else {
                return fail("CHAP_I is not 0..255");
            };
            let their = chap::decode_binary(c).map_err(|e| (st::AUTH_FAILED, e.to_string()))?;
            if their == challenge || t.secret == a.initiator.secret {
                return fail("mutual CHAP reflects the target's challenge or secret");
            }
            text::push(out, "CHAP_N", &t.user);
            text::push(
                out,
                "CHAP_R",
                &chap::encode_hex(&chap::response(their_id, &t.secret, &their)),
            );
        }
        self.auth = AuthState::Passed;
        Ok(())
    }

    fn establish(&mut self) -> Result<(Arc<Session>, Params), Refused> {
        let neg = self
            .neg
            .as_ref()
            .expect("negotiation exists after the first PDU");
        let params = neg.finish();
        match &self.joining {
            Some(s) => {
                if !s.add_conn(self.cid, self.kill.clone(), s.params.max_connections) {
                    return Err((
                        st::TOO_MANY_CONNECTIONS,
                        format!(
                            "session {} has its {} connection(s)",
                            s.tsih, s.params.max_connections
                        ),
                    ));
                }
                Ok((s.clone(), params))
            }
            None => {
                let tsih = self.sessions.tsih();
                let s = Arc::new(Session::new(
                    tsih,
                    self.isid,
                    &self.initiator,
                    self.discovery,
                    params,
                    self.cmdsn,
                    self.config.cmd_window,
                ));
                s.add_conn(self.cid, self.kill.clone(), u16::MAX);
                if let Some(old) = self.sessions.insert(s.clone()) {
                    tracing::info!(
                        "iscsi: session {} of {} reinstated as {tsih}",
                        old.tsih,
                        self.initiator
                    );
                }
                Ok((s, params))
            }
        }
    }
}
