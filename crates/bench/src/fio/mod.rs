//! fio: job files, the executors that run them, and the per-window logs they write.

pub mod executor;
pub mod jobfile;
pub mod logs;

pub use executor::{ExecError, Executor, FakeFio, LiveSink, RealFio, RemoteFio};
pub use jobfile::{JobFile, Section};
