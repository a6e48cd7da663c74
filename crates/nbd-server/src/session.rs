//! One client's life: the handshake within [`HANDSHAKE_TIMEOUT`] (with STARTTLS when
//! offered), then transmission until the client leaves, the node stops or the volume is
//! deleted.

use std::os::unix::io::RawFd;
use std::sync::Arc;
use std::time::Duration;

use storage_node::front_end::ByteStream;
use storage_node::Node;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::handshake::{self, Negotiated, OptionState, TlsMode};
use crate::{transmission, Exports, NbdTls, HANDSHAKE_TIMEOUT};

/// What every connection of a front end shares.
pub(crate) struct Conf {
    pub(crate) exports: Exports,
    pub(crate) busy_poll: Duration,
    pub(crate) tls: Option<NbdTls>,
}

/// One client without TLS, on `node` (no default export but the only volume):
/// negotiate, then transmit. `busy_poll`: see [`transmission::run`].
pub async fn connection<S>(
    stream: S,
    node: Arc<Node>,
    busy_poll: Option<(RawFd, Duration)>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    plain(stream, &Exports::new(node, None), busy_poll).await
}

/// A client of a front end without TLS.
async fn plain<S>(
    mut stream: S,
    exports: &Exports,
    busy_poll: Option<(RawFd, Duration)>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    let mut st = OptionState {
        no_zeroes: false,
        tls: TlsMode::Off,
        tls_active: false,
    };
    match first_phase(&mut stream, exports, &mut st, deadline).await? {
        Negotiated::Left => Ok(()),
        Negotiated::Session(s) => transmit(stream, exports, s, busy_poll).await,
        Negotiated::StartTls => Err(std::io::Error::other("STARTTLS acknowledged without TLS")),
    }
}

/// One client, with TLS offered or required as `tls` says.
pub async fn connection_tls<S>(
    stream: S,
    node: Arc<Node>,
    busy_poll: Option<(RawFd, Duration)>,
    tls: Option<NbdTls>,
) -> std::io::Result<()>
where
    S: ByteStream + 'static,
{
    let conf = Conf {
        exports: Exports::new(node, None),
        busy_poll: busy_poll.map_or(Duration::ZERO, |(_, d)| d),
        tls,
    };
    run(stream, &conf, busy_poll).await
}

/// One client of a front end configured by `conf`.
pub(crate) async fn run<S>(
    mut stream: S,
    conf: &Conf,
    busy_poll: Option<(RawFd, Duration)>,
) -> std::io::Result<()>
where
    S: ByteStream + 'static,
{
    let exports = &conf.exports;
    let Some(t) = &conf.tls else {
        return plain(stream, exports, busy_poll).await;
    };
    let deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    let mut st = OptionState {
        no_zeroes: false,
        tls: t.mode,
        tls_active: false,
    };
    match first_phase(&mut stream, exports, &mut st, deadline).await? {
        Negotiated::Left => Ok(()),
        Negotiated::Session(s) => transmit(stream, exports, s, busy_poll).await,
        Negotiated::StartTls => {
            let mut ts = tokio::time::timeout_at(deadline, t.acceptor.accept(Box::new(stream)))
                .await
                .map_err(|_| timed_out())??;
            st.tls_active = true;
            let second =
                tokio::time::timeout_at(deadline, handshake::options(&mut ts, exports, st))
                    .await
                    .map_err(|_| timed_out())??;
            match second {
                // Busy-polling reads the raw socket: never under TLS.
                Negotiated::Session(s) => transmit(ts, exports, s, None).await,
                Negotiated::Left | Negotiated::StartTls => Ok(()),
            }
        }
    }
}

fn timed_out() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, "handshake timed out")
}

/// The greeting and the options phase, within the handshake's deadline.
async fn first_phase<S>(
    stream: &mut S,
    exports: &Exports,
    st: &mut OptionState,
    deadline: tokio::time::Instant,
) -> std::io::Result<Negotiated>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    tokio::time::timeout_at(deadline, async {
        st.no_zeroes = handshake::greet(stream).await?;
        handshake::options(stream, exports, *st).await
    })
    .await
    .map_err(|_| timed_out())?
}

async fn transmit<S>(
    mut stream: S,
    exports: &Exports,
    session: handshake::Session,
    busy_poll: Option<(RawFd, Duration)>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let node = exports.node.clone();
    let shutdown = node.shutdown_signal();
    tracing::debug!(volume = %session.volume.name, structured = session.structured, "transmission");
    // A deleted volume closes its connections (the transmission loop is dropped).
    let mut removed = session.volume.removed_signal();
    let name = session.volume.name.clone();
    tokio::select! {
        r = transmission::run(&mut stream, node, session, shutdown, busy_poll) => r,
        _ = removed.wait_for(|r| *r) => Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            format!("volume {name:?} was deleted"),
        )),
    }
}
