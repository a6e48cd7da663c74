//! Pass-through layers over a [`Backend`], as nbdkit's filters wrap its plugins: each
//! implements the trait by calling the backend it wraps, changing one thing on the way.
//!
//! * [`Delay`] (nbdkit's `delay` filter): every read and every write-like operation of the
//!   host device takes this much longer — a slow disk under the node, to watch what the
//!   emulation on top does with it (`[backend] delay` in node.toml). The admission core
//!   absorbs host I/O into the array's service latency; a device slower than that latency
//!   shows up as overruns (`qoslab_volume_service_overruns_total`).
//! * [`Faults`] (nbdkit's `error` filter): operations touching a byte range fail with an
//!   errno — how a media error reaches a client (tests).
//!
//! A layer that can keep a thread waiting says so ([`Backend::blocks`]): front ends run
//! its calls on the blocking pool, so no runtime worker ever sleeps in one.
//!
//! What is *not* a layer: QoS. Ceilings, floors, burst credits, the controller, the
//! provisioned file system and the array's service latency decide *when* a request may
//! run and reply, without blocking a thread, in the admission core
//! ([`crate::admission`]); a layer runs inside the I/O call, synchronously, like the
//! backend it wraps.

use std::io;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use super::{Backend, Extent};

/// The methods a layer passes straight to the backend it wraps (`self.inner`).
macro_rules! pass_through {
    () => {
        fn flush(&self) -> io::Result<()> {
            self.inner.flush()
        }
        fn cache(&self, offset: u64, len: u64) -> io::Result<()> {
            self.inner.cache(offset, len)
        }
        fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
            self.inner.extents(offset, len, max)
        }
        fn allocated_bytes(&self) -> io::Result<u64> {
            self.inner.allocated_bytes()
        }
        fn byte_len(&self) -> io::Result<u64> {
            self.inner.byte_len()
        }
        fn grow(&self, size: u64) -> io::Result<()> {
            self.inner.grow(size)
        }
        fn can_write(&self) -> bool {
            self.inner.can_write()
        }
        fn can_trim(&self) -> bool {
            self.inner.can_trim()
        }
        fn can_zero(&self) -> bool {
            self.inner.can_zero()
        }
        fn can_fast_zero(&self) -> bool {
            self.inner.can_fast_zero()
        }
        fn can_flush(&self) -> bool {
            self.inner.can_flush()
        }
        fn can_cache(&self) -> bool {
            self.inner.can_cache()
        }
        fn can_extents(&self) -> bool {
            self.inner.can_extents()
        }
    };
}

/// Every read (`read`) and every write, trim and zeroing (`write`) takes this much longer.
pub struct Delay {
    inner: Arc<dyn Backend>,
    read: Duration,
    write: Duration,
}

impl Delay {
    pub fn new(inner: Arc<dyn Backend>, read: Duration, write: Duration) -> Delay {
        Delay { inner, read, write }
    }

    fn wait(d: Duration) {
        if !d.is_zero() {
            std::thread::sleep(d);
        }
    }
}

impl Backend for Delay {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        Delay::wait(self.read);
        self.inner.read_at(buf, offset)
    }
    fn read_append(&self, out: &mut Vec<u8>, offset: u64, len: usize) -> io::Result<()> {
        Delay::wait(self.read);
        self.inner.read_append(out, offset, len)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        Delay::wait(self.write);
        self.inner.write_at(buf, offset)
    }
    fn trim(&self, offset: u64, len: u64) -> io::Result<()> {
        Delay::wait(self.write);
        self.inner.trim(offset, len)
    }
    fn zero(&self, offset: u64, len: u64, may_trim: bool, fast: bool) -> io::Result<()> {
        Delay::wait(self.write);
        self.inner.zero(offset, len, may_trim, fast)
    }
    /// It sleeps a thread: its calls belong on the blocking pool.
    fn blocks(&self) -> bool {
        !(self.read.is_zero() && self.write.is_zero()) || self.inner.blocks()
    }
    pass_through!();
}

/// Reads and writes touching `range` fail with `errno` (the data there is untouched).
pub struct Faults {
    inner: Arc<dyn Backend>,
    range: Range<u64>,
    errno: i32,
}

impl Faults {
    pub fn new(inner: Arc<dyn Backend>, range: Range<u64>, errno: i32) -> Faults {
        Faults {
            inner,
            range,
            errno,
        }
    }

    fn check(&self, offset: u64, len: u64) -> io::Result<()> {
        if offset < self.range.end && offset.saturating_add(len) > self.range.start {
            return Err(io::Error::from_raw_os_error(self.errno));
        }
        Ok(())
    }
}

impl Backend for Faults {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.check(offset, buf.len() as u64)?;
        self.inner.read_at(buf, offset)
    }
    fn read_append(&self, out: &mut Vec<u8>, offset: u64, len: usize) -> io::Result<()> {
        self.check(offset, len as u64)?;
        self.inner.read_append(out, offset, len)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.check(offset, buf.len() as u64)?;
        self.inner.write_at(buf, offset)
    }
    fn trim(&self, offset: u64, len: u64) -> io::Result<()> {
        self.check(offset, len)?;
        self.inner.trim(offset, len)
    }
    fn zero(&self, offset: u64, len: u64, may_trim: bool, fast: bool) -> io::Result<()> {
        self.check(offset, len)?;
        self.inner.zero(offset, len, may_trim, fast)
    }
    fn blocks(&self) -> bool {
        self.inner.blocks()
    }
    pass_through!();
}

/// The layers node.toml's `[backend]` puts over every volume's file, outermost last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LayerSpec {
    /// `[backend] delay = { read = "..", write = ".." }`.
    pub delay_read: Duration,
    pub delay_write: Duration,
}

impl LayerSpec {
    /// `backend` under the layers this spec asks for.
    pub fn wrap(&self, backend: Arc<dyn Backend>) -> Arc<dyn Backend> {
        if self.delay_read.is_zero() && self.delay_write.is_zero() {
            return backend;
        }
        Arc::new(Delay::new(backend, self.delay_read, self.delay_write))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::scratch_file as file;

    #[test]
    fn delay_passes_data_through_and_takes_its_time() {
        let (_d, f) = file("layer-delay");
        let b = Delay::new(f, Duration::from_millis(20), Duration::from_millis(10));
        let t = std::time::Instant::now();
        b.write_at(b"hello", 4096).unwrap();
        assert!(t.elapsed() >= Duration::from_millis(10));
        let t = std::time::Instant::now();
        let mut out = Vec::new();
        b.read_append(&mut out, 4096, 5).unwrap();
        assert!(t.elapsed() >= Duration::from_millis(20));
        assert_eq!(out, b"hello");
        // Metadata passes straight through.
        assert_eq!(b.byte_len().unwrap(), 1 << 20);
    }

    #[test]
    fn no_layers_no_wrapper() {
        let (_d, f) = file("layer-none");
        let same = LayerSpec::default().wrap(f.clone());
        assert!(Arc::ptr_eq(&same, &f));
    }
}
