//! The counting relay: a TCP relay on 127.0.0.1 in front of the simulator that times every
//! request → answer exchange and counts the bytes both ways, without parsing HTTP.

use crate::prelude::*;

/// Locks a mutex; a panicked relay task must not stop the measurement of the others.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One request and its answer on one connection, as the relay saw them.
pub(crate) struct Exchange {
    pub(crate) start: Instant,
    pub(crate) end: Option<Instant>,
    pub(crate) request: Vec<u8>,
    pub(crate) response_bytes: u64,
}

/// What went through the relay since the last [`Relay::take`].
#[derive(Default)]
pub(crate) struct Session {
    pub(crate) exchanges: Vec<Arc<Mutex<Exchange>>>,
    pub(crate) sent: u64,
    pub(crate) received: u64,
    pub(crate) connections: usize,
}

/// Per connection: the exchange in progress and whether its answer has started.
#[derive(Default)]
pub(crate) struct Conn {
    pub(crate) current: Option<Arc<Mutex<Exchange>>>,
    pub(crate) answered: bool,
}

/// A TCP relay on 127.0.0.1 in front of the simulator. HTTP/1.1 without pipelining sends one
/// request, then reads one answer, per connection; so every switch from "server talking" to
/// "client talking" starts a new exchange, and no HTTP parsing is needed to time the calls.
pub(crate) struct Relay {
    pub(crate) addr: SocketAddr,
    pub(crate) session: Arc<Mutex<Session>>,
    pub(crate) accept: tokio::task::JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        // Stops listening; connections still open end when their peers close them.
        self.accept.abort();
    }
}

impl Relay {
    pub(crate) async fn start(upstream: SocketAddr) -> Result<Relay> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .context("relay: cannot listen on 127.0.0.1")?;
        let addr = listener.local_addr().context("relay: no local address")?;
        let session = Arc::new(Mutex::new(Session::default()));
        let shared = session.clone();
        let accept = tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((client, _)) => {
                        let session = shared.clone();
                        tokio::spawn(async move {
                            // A peer closing abruptly ends its connection, nothing else.
                            let _ = pipe(session, client, upstream).await;
                        });
                    }
                    Err(e) => {
                        // Out of file descriptors and the like: let it pass, the command that
                        // could not connect will fail and say so.
                        eprintln!("relay: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        });
        Ok(Relay {
            addr,
            session,
            accept,
        })
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Everything since the previous call; starts a new session.
    pub(crate) fn take(&self) -> Session {
        std::mem::take(&mut *lock(&self.session))
    }
}

pub(crate) async fn pipe(
    session: Arc<Mutex<Session>>,
    client: TcpStream,
    upstream: SocketAddr,
) -> io::Result<()> {
    let server = TcpStream::connect(upstream).await?;
    // Both ends send small requests and answers; Nagle's algorithm would add delays that are
    // the relay's, not the provider's.
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    lock(&session).connections += 1;
    let conn = Arc::new(Mutex::new(Conn::default()));
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = {
        let (session, conn) = (session.clone(), conn.clone());
        async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = client_read.read(&mut buf).await?;
                if n == 0 {
                    return server_write.shutdown().await;
                }
                request_bytes(&session, &conn, &buf[..n]);
                server_write.write_all(&buf[..n]).await?;
            }
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = server_read.read(&mut buf).await?;
            if n == 0 {
                return client_write.shutdown().await;
            }
            response_bytes(&session, &conn, n);
            client_write.write_all(&buf[..n]).await?;
        }
    };
    let (a, b) = tokio::join!(up, down);
    a.and(b)
}

pub(crate) fn request_bytes(session: &Mutex<Session>, conn: &Mutex<Conn>, bytes: &[u8]) {
    let now = Instant::now();
    let mut conn = lock(conn);
    let mut session = lock(session);
    session.sent += bytes.len() as u64;
    match &conn.current {
        Some(exchange) if !conn.answered => lock(exchange).request.extend_from_slice(bytes),
        _ => {
            let exchange = Arc::new(Mutex::new(Exchange {
                start: now,
                end: None,
                request: bytes.to_vec(),
                response_bytes: 0,
            }));
            session.exchanges.push(exchange.clone());
            conn.current = Some(exchange);
            conn.answered = false;
        }
    }
}

pub(crate) fn response_bytes(session: &Mutex<Session>, conn: &Mutex<Conn>, n: usize) {
    let now = Instant::now();
    let mut conn = lock(conn);
    lock(session).received += n as u64;
    if let Some(exchange) = &conn.current {
        let mut exchange = lock(exchange);
        exchange.response_bytes += n as u64;
        exchange.end = Some(now);
    }
    conn.answered = true;
}
