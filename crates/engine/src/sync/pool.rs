//! A bounded pool of jobs whose starts and results are seen on the calling thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub(super) enum Event<R> {
    Started(usize),
    Finished(usize, Duration, R),
}

/// Runs `work` on every item, at most `jobs` at once, and hands each start and result to
/// `seen` on the calling thread (which owns the output).
pub(super) fn pool<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    work: impl Fn(&T) -> R + Sync,
    mut seen: impl FnMut(Event<R>),
) {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            let tx = tx.clone();
            let (next, work) = (&next, &work);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(item) = items.get(i) else { break };
                let _ = tx.send(Event::Started(i));
                let start = Instant::now();
                let result = work(item);
                let _ = tx.send(Event::Finished(i, start.elapsed(), result));
            });
        }
        drop(tx);
        for event in rx {
            seen(event);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_runs_at_most_n_at_once_and_sees_every_result() {
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let items: Vec<usize> = (0..9).collect();
        let mut results = Vec::new();
        pool(
            &items,
            3,
            |n| {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(30));
                running.fetch_sub(1, Ordering::SeqCst);
                n * 2
            },
            |e| {
                if let Event::Finished(i, _, r) = e {
                    results.push((i, r));
                }
            },
        );
        results.sort();
        assert_eq!(results, (0..9).map(|i| (i, i * 2)).collect::<Vec<_>>());
        assert_eq!(peak.load(Ordering::SeqCst), 3);
    }
}
