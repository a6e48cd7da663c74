//! Who may call the API: HTTP basic auth for the users in `DATA_DIR/users.json`
//! ([`super::users`]) and the bearer token of `--api-token-file`.
//!
//! Rules: with users, every `/api` request needs valid credentials (basic, or the bearer
//! token if one is set), as on ONTAP; with only a token, mutating requests need it and
//! reads stay open; with neither, the API is open (a loopback lab). A user's password is
//! checked with Argon2 once; afterwards a keyed BLAKE2b digest of the accepted
//! credentials is cached per user (and dropped when the users file changes), so a client
//! sending basic auth on every request costs one hash, not one Argon2 run, per request.
//!
//! **Fails closed.** Whether users' credentials are required is decided when the node
//! starts (users in `users.json`) and can only become stricter while it runs: a user
//! created on an open node makes credentials required at once, and losing the last user
//! or the file never opens the API again (requests get 401, or 500 for an unreadable
//! file). An unknown user name costs one Argon2 run against a dummy hash, like a wrong
//! password, so names cannot be told apart by timing. Repeated failures from one source
//! back off ([`super::backoff`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;

use blake2::digest::{KeyInit, Mac};
use blake2::Blake2bMac512;

use super::model::{code, ApiError};
use super::users::{self, User};

/// Credentials a request carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    None,
    Bearer(String),
    Basic {
        user: String,
        password: String,
    },
    /// An Authorization header we cannot read (unknown scheme, bad base64).
    Malformed(String),
}

/// Parse an `Authorization` header value.
pub fn parse(header: Option<&str>) -> Credentials {
    let Some(h) = header.map(str::trim) else {
        return Credentials::None;
    };
    let (scheme, rest) = h.split_once(' ').unwrap_or((h, ""));
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        return Credentials::Bearer(rest.to_string());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let Some(raw) = base64_decode(rest) else {
            return Credentials::Malformed("basic credentials are not valid base64".into());
        };
        let text = String::from_utf8_lossy(&raw);
        let Some((user, password)) = text.split_once(':') else {
            return Credentials::Malformed("basic credentials lack the ':' separator".into());
        };
        return Credentials::Basic {
            user: user.to_string(),
            password: password.to_string(),
        };
    }
    let shown: String = scheme
        .chars()
        .take(16)
        .flat_map(char::escape_default)
        .collect();
    Credentials::Malformed(format!("unsupported authorization scheme \"{shown}\""))
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    if bytes.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let n = chunk.len() - 1;
        for i in 0..n {
            out.push((acc >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

/// Compare in time independent of where the first difference is.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The users file as last read, and the credentials already verified against it.
struct Cache {
    stamp: Option<(SystemTime, u64, u64)>,
    users: Result<Vec<User>, String>,
    /// user → MAC of "user:password" that Argon2 accepted.
    verified: HashMap<String, Vec<u8>>,
}

/// The node's authentication settings.
pub struct Auth {
    token: Option<String>,
    data_dir: Option<PathBuf>,
    mac_key: [u8; 32],
    cache: Mutex<Cache>,
    /// Users' credentials are required: set at start when users exist, and latched on
    /// when the first user appears; never cleared while the node runs.
    users_required: std::sync::atomic::AtomicBool,
    /// The PHC hash an unknown user name is checked against (same cost as a real one).
    dummy: String,
}

/// The outcome of checking a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Basic credentials need an Argon2 check (slow: run it off the async workers).
    NeedsHash {
        user: String,
        password: String,
    },
}

impl Auth {
    /// `data_dir`: where `users.json` lives (`None`: no users, e.g. in unit tests).
    pub fn new(token: Option<String>, data_dir: Option<PathBuf>) -> Auth {
        let mut mac_key = [0u8; 32];
        argon2::password_hash::rand_core::RngCore::fill_bytes(
            &mut argon2::password_hash::rand_core::OsRng,
            &mut mac_key,
        );
        let auth = Auth {
            token,
            data_dir,
            mac_key,
            cache: Mutex::new(Cache {
                stamp: None,
                users: Ok(Vec::new()),
                verified: HashMap::new(),
            }),
            users_required: std::sync::atomic::AtomicBool::new(false),
            dummy: users::hash_password(&format!("{:x?}", mac_key))
                .unwrap_or_else(|_| DUMMY_PHC.to_string()),
        };
        // Decide at start: an unreadable users file also requires credentials.
        let mut c = auth.lock();
        auth.refresh(&mut c);
        drop(c);
        auth
    }

    /// Whether users' credentials are required (decided at start, latched on since).
    pub fn users_required(&self) -> bool {
        self.users_required
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Re-read the users file when it changed (mtime, size or inode: writers rename).
    fn refresh(&self, c: &mut Cache) {
        let Some(dir) = &self.data_dir else { return };
        let path = users::users_file(dir);
        let stamp = std::fs::metadata(&path).ok().map(|m| {
            let ino = std::os::unix::fs::MetadataExt::ino(&m);
            (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len(), ino)
        });
        if stamp == c.stamp && c.stamp.is_some() {
            return;
        }
        c.stamp = stamp;
        c.verified.clear();
        c.users = users::load(dir).map_err(|e| e.to_string());
        match &c.users {
            Err(e) => {
                tracing::error!("API users: {e}; every API request is refused until it is fixed")
            }
            Ok(u) if u.is_empty() && self.users_required() => tracing::error!(
                "API users: {} has no users; every request needing credentials is refused \
                 (create one with `qoslab user create`): the API never opens while the node runs",
                users::users_file(dir).display()
            ),
            Ok(_) => {}
        }
        if !matches!(&c.users, Ok(u) if u.is_empty()) {
            self.users_required
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Whether users' credentials are required everywhere.
    pub fn has_users(&self) -> bool {
        let mut c = self.lock();
        self.refresh(&mut c);
        self.users_required()
    }

    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    fn mac(&self, user: &str, password: &str) -> Vec<u8> {
        let mut m = <Blake2bMac512 as KeyInit>::new_from_slice(&self.mac_key)
            .unwrap_or_else(|_| <Blake2bMac512 as KeyInit>::new(&Default::default()));
        m.update(user.as_bytes());
        m.update(b":");
        m.update(password.as_bytes());
        m.finalize().into_bytes().to_vec()
    }

    /// Check a request's credentials. `mutating`: POST/PATCH/DELETE.
    pub fn check(&self, creds: &Credentials, mutating: bool) -> Result<Verdict, ApiError> {
        let mut c = self.lock();
        self.refresh(&mut c);
        let users = match &c.users {
            Ok(u) => u.clone(),
            Err(e) => {
                return Err(ApiError::internal(format!(
                    "the node's users file is unreadable ({e}); fix or remove it"
                )))
            }
        };
        let users_required = self.users_required();
        let required = users_required || (self.token.is_some() && mutating);
        match creds {
            Credentials::None if !required => Ok(Verdict::Allowed),
            Credentials::None => Err(self.missing(users_required)),
            Credentials::Malformed(why) => Err(unauthorized(format!(
                "authentication failed: {why}; send HTTP basic credentials or a bearer token"
            ))),
            Credentials::Bearer(t) => match &self.token {
                Some(tok) if same(t.as_bytes(), tok.as_bytes()) => Ok(Verdict::Allowed),
                _ if !required => Ok(Verdict::Allowed),
                _ => Err(unauthorized(
                    "authentication failed: the bearer token is wrong",
                )),
            },
            Credentials::Basic { user, password } => {
                if users.is_empty() {
                    if !required {
                        return Ok(Verdict::Allowed);
                    }
                    return Err(unauthorized(
                        "authentication failed: this node has no API users (create one with \
                         `qoslab user create NAME --data-dir DIR`), send the bearer token",
                    ));
                }
                // An unknown name takes the same Argon2 run as a wrong password
                // (verify_hash checks it against the dummy hash).
                let mac = self.mac(user, password);
                if c.verified.get(user).is_some_and(|m| same(m, &mac)) {
                    return Ok(Verdict::Allowed);
                }
                Ok(Verdict::NeedsHash {
                    user: user.clone(),
                    password: password.clone(),
                })
            }
        }
    }

    /// The slow half of a basic-auth check (Argon2); caches a success.
    pub fn verify_hash(&self, user: &str, password: &str) -> Result<(), ApiError> {
        let phc = {
            let c = self.lock();
            match &c.users {
                Ok(u) => u
                    .iter()
                    .find(|x| x.name == user)
                    .map(|x| x.password_hash.clone()),
                Err(_) => None,
            }
        };
        let known = phc.is_some();
        let phc = phc.unwrap_or_else(|| self.dummy.clone());
        if !users::verify_password(password, &phc) || !known {
            return Err(bad_login());
        }
        let mac = self.mac(user, password);
        self.lock().verified.insert(user.to_string(), mac);
        Ok(())
    }

    fn missing(&self, users: bool) -> ApiError {
        unauthorized(if users {
            "authentication required: send HTTP basic credentials of an API user \
             (curl -u USER:PASSWORD; users are created with `qoslab user create`)"
        } else {
            "authentication required: send \"Authorization: Bearer <token>\" with the \
             token the node was started with (--api-token-file)"
        })
    }
}

/// Used only if hashing the dummy password failed at start (Argon2id, default cost).
const DUMMY_PHC: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$cW9zbGFiLWR1bW15LXNhbHQ$w3ZVsE5+7y+TNIvM0G4ALpn6Cn3fC7zWo2sJ7KcJ3bI";

fn unauthorized(msg: impl Into<String>) -> ApiError {
    ApiError::new(401, code::UNAUTHORIZED, "", msg)
}

/// One message for an unknown user and a wrong password (no user enumeration).
fn bad_login() -> ApiError {
    unauthorized("authentication failed: wrong user name or password")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losing_the_users_never_opens_the_api() {
        let dir = test_support::TestDir::new("auth-closed");
        users::create(&dir, "admin", "pw", false).unwrap();
        let a = Auth::new(None, Some(dir.to_path_buf()));
        std::fs::remove_file(users::users_file(&dir)).unwrap();
        assert!(a.has_users());
        assert_eq!(a.check(&Credentials::None, true).unwrap_err().status, 401);
        assert_eq!(a.check(&Credentials::None, false).unwrap_err().status, 401);
        let basic = Credentials::Basic {
            user: "admin".into(),
            password: "pw".into(),
        };
        assert_eq!(a.check(&basic, true).unwrap_err().status, 401);
        // An empty file, the same; an unreadable one is a 500.
        std::fs::write(users::users_file(&dir), "{\"users\": []}").unwrap();
        assert_eq!(a.check(&Credentials::None, true).unwrap_err().status, 401);
        std::fs::write(users::users_file(&dir), "garbage").unwrap();
        assert_eq!(a.check(&Credentials::None, true).unwrap_err().status, 500);
        // An open node becomes closed as soon as a user appears, and stays closed.
        let open_dir = test_support::TestDir::new("auth-latch");
        let o = Auth::new(None, Some(open_dir.to_path_buf()));
        assert_eq!(o.check(&Credentials::None, true), Ok(Verdict::Allowed));
        users::create(&open_dir, "admin", "pw", false).unwrap();
        assert_eq!(o.check(&Credentials::None, true).unwrap_err().status, 401);
        users::delete(&open_dir, "admin").unwrap();
        assert_eq!(o.check(&Credentials::None, true).unwrap_err().status, 401);
    }

    #[test]
    fn headers() {
        assert_eq!(parse(None), Credentials::None);
        assert_eq!(
            parse(Some("Bearer s3cret")),
            Credentials::Bearer("s3cret".into())
        );
        // curl -u admin:Netapp1!
        assert_eq!(
            parse(Some("Basic YWRtaW46TmV0YXBwMSE=")),
            Credentials::Basic {
                user: "admin".into(),
                password: "Netapp1!".into()
            }
        );
        assert_eq!(
            parse(Some("basic dTpwOmM=")),
            Credentials::Basic {
                user: "u".into(),
                password: "p:c".into()
            }
        );
        assert!(matches!(
            parse(Some("Basic @@@")),
            Credentials::Malformed(_)
        ));
        assert!(matches!(
            parse(Some("Basic dXNlcg==")),
            Credentials::Malformed(_)
        ));
        assert!(matches!(parse(Some("Digest x")), Credentials::Malformed(_)));
        assert_eq!(base64_decode("YQ").unwrap(), b"a");
        assert_eq!(base64_decode("YWI=").unwrap(), b"ab");
    }

    #[test]
    fn rules() {
        let open = Auth::new(None, None);
        assert_eq!(open.check(&Credentials::None, true), Ok(Verdict::Allowed));
        let tok = Auth::new(Some("t".into()), None);
        assert_eq!(tok.check(&Credentials::None, false), Ok(Verdict::Allowed));
        assert_eq!(tok.check(&Credentials::None, true).unwrap_err().status, 401);
        assert_eq!(
            tok.check(&Credentials::Bearer("t".into()), true),
            Ok(Verdict::Allowed)
        );
        assert_eq!(
            tok.check(&Credentials::Bearer("x".into()), true)
                .unwrap_err()
                .status,
            401
        );
        let dir = test_support::TestDir::new("auth");
        users::create(&dir, "admin", "Netapp1!", false).unwrap();
        let a = Auth::new(None, Some(dir.to_path_buf()));
        assert!(a.has_users());
        assert_eq!(a.check(&Credentials::None, false).unwrap_err().status, 401);
        let good = Credentials::Basic {
            user: "admin".into(),
            password: "Netapp1!".into(),
        };
        assert!(matches!(
            a.check(&good, false),
            Ok(Verdict::NeedsHash { .. })
        ));
        a.verify_hash("admin", "Netapp1!").unwrap();
        assert_eq!(a.check(&good, false), Ok(Verdict::Allowed));
        assert_eq!(a.verify_hash("admin", "nope").unwrap_err().status, 401);
        // An unknown user costs an Argon2 run too (against the dummy hash) and fails.
        let ghost = Credentials::Basic {
            user: "ghost".into(),
            password: "x".into(),
        };
        assert!(matches!(
            a.check(&ghost, false),
            Ok(Verdict::NeedsHash { .. })
        ));
        assert_eq!(a.verify_hash("ghost", "x").unwrap_err().status, 401);
        // A changed users file drops the cached verification.
        std::thread::sleep(std::time::Duration::from_millis(20));
        users::create(&dir, "admin", "changed!", true).unwrap();
        assert!(matches!(
            a.check(&good, false),
            Ok(Verdict::NeedsHash { .. })
        ));
        assert_eq!(a.verify_hash("admin", "Netapp1!").unwrap_err().status, 401);
    }
}
