//! Thread tokens: a number unique among the threads alive, which the
//! circular queue turns into single-producer shards (see [`thread_token`]).
//! Not a source number ([`crate::model::source`]): a program may give one source
//! number to several threads, never one token.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

thread_local! {
    static TOKEN: Cell<u64> = const { Cell::new(0) };
    static TOKEN_GUARD: TokenGuard = const { TokenGuard };
}

static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// Tokens of threads that have exited, for reuse.
static FREE_TOKENS: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// The token of a thread whose token was given back (it is exiting): owns
/// nothing and never becomes an owner.
pub(crate) const EXITED_TOKEN: u64 = u64::MAX - 1;

/// A number unique among the threads alive (1, 2, 3, …; never 0). When a
/// thread exits, its token goes back to a pool and the next new thread
/// reuses it, so a program that keeps starting short-lived threads keeps
/// using the same small tokens. The circular queue gives each token a
/// single-producer shard; reuse hands a dead thread's shards to its
/// successor (the pool's lock orders the dead thread's last writes before
/// the new thread's first). Not a source number: a program may give one
/// source number to several threads, never one token.
#[inline(always)]
pub(crate) fn thread_token() -> u64 {
    TOKEN.with(|c| {
        let v = c.get();
        if v != 0 {
            v
        } else {
            assign_token(c)
        }
    })
}

fn free_tokens() -> std::sync::MutexGuard<'static, Vec<u64>> {
    FREE_TOKENS.lock().unwrap_or_else(|e| e.into_inner())
}

#[cold]
#[inline(never)]
fn assign_token(cell: &Cell<u64>) -> u64 {
    // A u64 counter does not wrap in the life of any process.
    let v = free_tokens()
        .pop()
        .unwrap_or_else(|| NEXT_TOKEN.fetch_add(1, Ordering::Relaxed));
    cell.set(v);
    // Gives the token back when the thread exits. If the thread is already
    // exiting (logging from another thread-local's destructor), the token is
    // never reused: harmless.
    let _ = TOKEN_GUARD.try_with(|_| ());
    v
}

/// Gives this thread's token back when the thread exits.
struct TokenGuard;

impl Drop for TokenGuard {
    fn drop(&mut self) {
        // `TOKEN` has no destructor, so it is still there. Anything this
        // thread logs from now on goes to the shared ring.
        let token = TOKEN.with(|c| c.replace(EXITED_TOKEN));
        // The shards this thread owns go with its token: forget them, so
        // that a late log from another thread-local's destructor takes the
        // shared ring rather than a shard a new thread may own.
        crate::ring::producer_cache::clear();
        if token != 0 && token != EXITED_TOKEN {
            free_tokens().push(token);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn token_of_new_thread() -> u64 {
        std::thread::spawn(thread_token).join().unwrap()
    }

    #[test]
    fn tokens_are_distinct_among_live_threads_and_reused_after_exit() {
        let mine = thread_token();
        assert_ne!(mine, 0);
        assert_eq!(thread_token(), mine);
        assert_ne!(token_of_new_thread(), mine);
        // A thread's token goes back to the pool at exit: the next new thread
        // takes it (other tests' threads may take it first now and then, so
        // try a few times).
        assert!((0..100).any(|_| token_of_new_thread() == token_of_new_thread()));
    }
}
