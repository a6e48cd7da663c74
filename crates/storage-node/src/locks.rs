//! The node's locks, and its front ends', are used as they are when a holder panicked: a
//! panic there would be a bug in what the holder computed, and the tables they guard
//! (volumes, buckets, policies, flows, maps; an iSCSI session's window and connections, a
//! LU's reservations) stay consistent, so the node keeps serving.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}
