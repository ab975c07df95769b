//! A sliding-window rate limit: at most `max` sends in any `per`. DingTalk and WeCom robots refuse
//! more than 20 messages a minute; waiting here is cheaper than being refused.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug)]
pub struct Window {
    max: usize,
    per: Duration,
    sent: Mutex<VecDeque<Instant>>,
}

impl Window {
    pub fn new(max: usize, per: Duration) -> Window {
        Window { max: max.max(1), per, sent: Mutex::new(VecDeque::new()) }
    }

    /// At most this many sends in any `per`.
    pub fn max(&self) -> usize {
        self.max
    }

    pub fn per(&self) -> Duration {
        self.per
    }

    /// The vendors' limit for group robots: 20 a minute.
    pub fn robot() -> Window {
        Window::new(20, Duration::from_secs(60))
    }

    /// How long until a send is allowed now; zero when it is, and then the send is counted.
    pub fn try_acquire(&self, now: Instant) -> Duration {
        let mut sent = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        while sent.front().is_some_and(|&t| now.duration_since(t) >= self.per) {
            sent.pop_front();
        }
        if sent.len() < self.max {
            sent.push_back(now);
            return Duration::ZERO;
        }
        // Not empty: it holds `max` ≥ 1 entries.
        sent.front().map(|&t| (t + self.per).duration_since(now)).unwrap_or_default()
    }

    /// Waits until a send is allowed, and counts it.
    pub async fn acquire(&self) {
        loop {
            let wait = self.try_acquire(Instant::now());
            if wait.is_zero() {
                return;
            }
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_slides() {
        let w = Window::new(2, Duration::from_secs(60));
        let t0 = Instant::now();
        assert_eq!(w.try_acquire(t0), Duration::ZERO);
        assert_eq!(w.try_acquire(t0 + Duration::from_secs(10)), Duration::ZERO);
        assert_eq!(w.try_acquire(t0 + Duration::from_secs(20)), Duration::from_secs(40));
        assert_eq!(w.try_acquire(t0 + Duration::from_secs(60)), Duration::ZERO, "the first one left the window");
        assert_eq!(w.try_acquire(t0 + Duration::from_secs(61)), Duration::from_secs(9));
    }

    #[tokio::test(start_paused = true)]
    async fn acquire_waits_for_the_window() {
        let w = Window::robot();
        let t0 = Instant::now();
        for _ in 0..20 {
            w.acquire().await;
        }
        assert_eq!(t0.elapsed(), Duration::ZERO);
        w.acquire().await;
        assert_eq!(t0.elapsed(), Duration::from_secs(60), "the 21st message waits a minute");
    }
}
