//! A reference to an object by `name` and/or `uuid`, as ONTAP's bodies give them: a
//! volume's `qos.policy`, a LUN's `qos_policy`, a map's `lun` and `igroup`, a LUN's
//! `location.volume`.

/// A reference by `name` and/or `uuid`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ref {
    pub name: Option<String>,
    pub uuid: Option<String>,
}

impl Ref {
    /// Whether an object with this name and uuid is the one referred to.
    pub fn is(&self, name: &str, uuid: &str) -> bool {
        !matches!(&self.name, Some(n) if n != name) && !matches!(&self.uuid, Some(u) if u != uuid)
    }

    /// The reference in a message: `named "a" with uuid U`, `named "a"`, `with uuid U`.
    pub fn describe(&self) -> String {
        match (&self.name, &self.uuid) {
            (Some(n), Some(u)) => format!("named {n:?} with uuid {u}"),
            (Some(n), None) => format!("named {n:?}"),
            (None, Some(u)) => format!("with uuid {u}"),
            (None, None) => String::new(),
        }
    }
}
