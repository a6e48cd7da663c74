//! API users: `DATA_DIR/users.json`, one record per user with an Argon2id hash (salted,
//! PHC string format) of the password. Written by `qoslab user create|delete` (atomically:
//! a temporary file renamed over the old one, mode 0600); read by the node, which notices
//! changes without a restart.

use std::path::{Path, PathBuf};

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use serde::{Deserialize, Serialize};

/// The users file inside a data directory.
pub fn users_file(data_dir: &Path) -> PathBuf {
    data_dir.join("users.json")
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct User {
    pub name: String,
    /// Argon2id PHC string: `$argon2id$v=19$m=19456,t=2,p=1$SALT$HASH`.
    pub password_hash: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct UsersFile {
    users: Vec<User>,
}

#[derive(Debug, thiserror::Error)]
pub enum UserError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a qoslab users file: {detail}")]
    Corrupt { path: String, detail: String },
    #[error(
        "invalid user name {0:?}: 1 to 64 characters from A-Z a-z 0-9 _ - . (not starting with - or .)"
    )]
    BadName(String),
    #[error("the password is empty")]
    EmptyPassword,
    #[error("user {0:?} already exists (qoslab user delete {0} first, or --replace)")]
    Exists(String),
    #[error("no user {0:?} (qoslab user list shows them)")]
    NoSuchUser(String),
    #[error("hashing the password: {0}")]
    Hash(String),
}

fn valid_user_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && !n.starts_with(['-', '.'])
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Read the users (none when the file does not exist).
pub fn load(data_dir: &Path) -> Result<Vec<User>, UserError> {
    let path = users_file(data_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(UserError::Io {
                path: path.display().to_string(),
                source,
            })
        }
    };
    let f: UsersFile = serde_json::from_str(&text).map_err(|e| UserError::Corrupt {
        path: path.display().to_string(),
        detail: e.to_string(),
    })?;
    for u in &f.users {
        if let Err(e) = PasswordHash::new(&u.password_hash) {
            return Err(UserError::Corrupt {
                path: path.display().to_string(),
                detail: format!("user {:?}: password hash: {e}", u.name),
            });
        }
    }
    Ok(f.users)
}

fn save(data_dir: &Path, users: &[User]) -> Result<(), UserError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    crate::private::create_dir_all(data_dir).map_err(|source| UserError::Io {
        path: data_dir.display().to_string(),
        source,
    })?;
    let path = users_file(data_dir);
    let tmp = path.with_extension("json.tmp");
    let io = |source| UserError::Io {
        path: tmp.display().to_string(),
        source,
    };
    let body = serde_json::to_string_pretty(&UsersFile {
        users: users.to_vec(),
    })
    .map_err(|e| UserError::Hash(e.to_string()))?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(body.as_bytes()).map_err(io)?;
    f.write_all(b"\n").map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(|source| UserError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Hash a password with Argon2id (default parameters: 19 MiB, 2 passes) and a random salt.
pub fn hash_password(password: &str) -> Result<String, UserError> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| UserError::Hash(e.to_string()))
}

/// Whether `password` matches a stored PHC hash (constant-time comparison inside).
pub fn verify_password(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc)
        .map(|h| {
            Argon2::default()
                .verify_password(password.as_bytes(), &h)
                .is_ok()
        })
        .unwrap_or(false)
}

/// Add a user (or replace its password with `replace`).
pub fn create(data_dir: &Path, name: &str, password: &str, replace: bool) -> Result<(), UserError> {
    if !valid_user_name(name) {
        return Err(UserError::BadName(name.to_string()));
    }
    if password.is_empty() {
        return Err(UserError::EmptyPassword);
    }
    let mut users = load(data_dir)?;
    let hash = hash_password(password)?;
    match users.iter_mut().find(|u| u.name == name) {
        Some(_) if !replace => return Err(UserError::Exists(name.to_string())),
        Some(u) => u.password_hash = hash,
        None => users.push(User {
            name: name.to_string(),
            password_hash: hash,
        }),
    }
    save(data_dir, &users)
}

pub fn delete(data_dir: &Path, name: &str) -> Result<(), UserError> {
    let mut users = load(data_dir)?;
    let before = users.len();
    users.retain(|u| u.name != name);
    if users.len() == before {
        return Err(UserError::NoSuchUser(name.to_string()));
    }
    save(data_dir, &users)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_verify_replace_delete() {
        let dir = test_support::TestDir::new("users");
        create(&dir, "admin", "Netapp1!", false).unwrap();
        let users = load(&dir).unwrap();
        assert_eq!(users.len(), 1);
        assert!(users[0].password_hash.starts_with("$argon2id$"));
        assert!(!users[0].password_hash.contains("Netapp1!"));
        assert!(verify_password("Netapp1!", &users[0].password_hash));
        assert!(!verify_password("netapp1!", &users[0].password_hash));
        assert!(matches!(
            create(&dir, "admin", "x", false),
            Err(UserError::Exists(_))
        ));
        create(&dir, "admin", "other", true).unwrap();
        let users = load(&dir).unwrap();
        assert!(verify_password("other", &users[0].password_hash));
        assert!(matches!(
            create(&dir, "-x", "p", false),
            Err(UserError::BadName(_))
        ));
        assert!(matches!(
            create(&dir, "b", "", false),
            Err(UserError::EmptyPassword)
        ));
        // Two hashes of one password differ (salted).
        assert_ne!(
            hash_password("same").unwrap(),
            hash_password("same").unwrap()
        );
        let mode = std::fs::metadata(users_file(&dir)).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
        delete(&dir, "admin").unwrap();
        assert!(load(&dir).unwrap().is_empty());
        assert!(matches!(
            delete(&dir, "admin"),
            Err(UserError::NoSuchUser(_))
        ));
        std::fs::write(users_file(&dir), "{\"users\": 3}").unwrap();
        assert!(matches!(load(&dir), Err(UserError::Corrupt { .. })));
    }
}
