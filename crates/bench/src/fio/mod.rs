//! fio: job files and the executors that run them.

pub mod executor;
pub mod jobfile;

pub use executor::{ExecError, Executor, FakeFio, LiveSink, RealFio, RemoteFio};
pub use jobfile::{JobFile, Section};
