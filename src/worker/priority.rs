//! Strict priority between lanes (`PoolBuilder::strict_priority`): the levels a worker looks
//! at, heaviest first, and its pick by them. A lane of a level is served only once every
//! heavier level had nothing for us anywhere: our bundle, our deque, the lane's shared queue,
//! the other workers' deques. Within a level, the lanes share by fair queueing, as in a
//! weighted pool (`find_work_in_lanes`).
//!
//! A selection policy over the queues the weighted pick takes from, with the same takes: it
//! adds no synchronisation. `find_work` still returns nothing only after looking at every
//! queue (every level, then the join deques), so the park re-check and its argument
//! (docs/protocol.md, "Why no wake-up is lost") are unchanged; "Strict priority" there says
//! what is promised.

use super::WorkerThread;
use crate::job::Job;
use crate::registry::Crew;

/// The lanes of a strict-priority pool as levels of equal weight, heaviest first.
pub(super) struct Priority {
    /// Per level, its weight and its lanes as a bit set (bit `lane`).
    levels: Box<[(u32, u32)]>,
}

impl Priority {
    /// The levels of `lanes` (name, weight), or `None` where there is nothing to order: a
    /// pool built without `strict_priority`, or whose lanes all have one weight (one level,
    /// served by the weighted pick).
    pub(super) fn of(lanes: &[(String, u32)], strict: bool) -> Option<Priority> {
        if !strict {
            return None;
        }
        let mut levels: Vec<(u32, u32)> = Vec::new();
        for (lane, &(_, weight)) in lanes.iter().enumerate() {
            match levels.iter_mut().find(|(w, _)| *w == weight) {
                Some((_, set)) => *set |= 1 << lane,
                None => levels.push((weight, 1 << lane)),
            }
        }
        if levels.len() < 2 {
            return None;
        }
        levels.sort_by_key(|&(weight, _)| std::cmp::Reverse(weight));
        Some(Priority {
            levels: levels.into_boxed_slice(),
        })
    }

    /// The lane sets of the levels heavier than `weight`, heaviest first.
    fn above(&self, weight: u32) -> impl Iterator<Item = u32> + '_ {
        self.levels
            .iter()
            .take_while(move |&&(w, _)| w > weight)
            .map(|&(_, set)| set)
    }
}

impl WorkerThread {
    /// `find_work` past our join deque and mailbox in a strict-priority pool: the heaviest
    /// level with a task for us, then the other workers' join deques (which only one-lane
    /// pools fill; looked at so that nothing queued is ever left out of a search).
    #[inline(never)]
    pub(super) fn find_work_by_priority(&self, priority: &Priority) -> Option<(Job, usize)> {
        self.take_by_priority(priority, 0)
            .or_else(|| self.steal_among(true, 0))
    }

    /// A task of the heaviest level above `weight` that has one (`take_level`); only when a
    /// level has none, the next level down.
    fn take_by_priority(&self, priority: &Priority, weight: u32) -> Option<(Job, usize)> {
        priority.above(weight).find_map(|set| self.take_level(set))
    }

    /// A task of the lanes of `set`: from our bundle, deque or the lane's shared queue (fair
    /// queueing within the level), else stolen from another worker's deque of one of them.
    /// A take from a shared queue gives up on a ring's head another worker took first
    /// (`SharedQueue::steal_noting`), which a weighted pick leaves to its next search; here
    /// it would hand the turn to a lighter level, so while the level still shows work we
    /// look again. A round comes back empty-handed only when another worker took from the
    /// level meanwhile, so this ends (lock-free, as the rings' consumers are).
    fn take_level(&self, set: u32) -> Option<(Job, usize)> {
        loop {
            // Whether a lane of the level had work without stealing when we looked.
            let seen = match self.fair_lane(set) {
                Some((best, idle)) => {
                    if let Some(found) = self.take_seen(best, set & !idle) {
                        return Some(found);
                    }
                    true
                }
                None => false,
            };
            if let Some(found) = self.steal_among(false, set) {
                return Some(found);
            }
            if !seen || !self.level_has_work(set) {
                return None;
            }
            std::hint::spin_loop();
        }
    }

    /// A task of lane `best`, else (emptied by thieves meanwhile) of another lane of `busy`,
    /// the lanes that had work: the take of the weighted pick (`find_work_in_lanes`).
    fn take_seen(&self, best: usize, busy: u32) -> Option<(Job, usize)> {
        if let Some(job) = self.take_from_lane(best) {
            return Some((job, best));
        }
        (0..self.locals.len())
            .filter(|&lane| lane != best && busy & (1 << lane) != 0)
            .find_map(|lane| self.take_from_lane(lane).map(|job| (job, lane)))
    }

    /// `yield_to_lanes` in a strict-priority pool: runs the queued tasks of the lanes heavier
    /// than the running task's, heaviest first, until none is left (or the pool pauses).
    /// Nesting is bounded as in a weighted pool: a task run here is of a heavier lane.
    pub(super) fn yield_by_priority(&self, priority: &Priority) -> usize {
        let reg = &*self.registry;
        let weight = reg.cfg.lanes[self.clock.lane()].1;
        let mut ran = 0;
        while !Crew::paused(reg.crew.control()) {
            let Some((job, lane)) = self.take_by_priority(priority, weight) else {
                break;
            };
            if !self.execute_unless_paused(job, lane) {
                break;
            }
            ran += 1;
        }
        ran
    }
}

#[cfg(test)]
mod tests {
    use super::Priority;

    fn lanes(weights: &[u32]) -> Vec<(String, u32)> {
        weights.iter().map(|&w| (format!("w{w}"), w)).collect()
    }

    #[test]
    fn levels_are_equal_weights_heaviest_first() {
        let p = Priority::of(&lanes(&[1, 4, 2, 4, 1]), true).unwrap();
        assert_eq!(&*p.levels, &[(4, 0b01010), (2, 0b00100), (1, 0b10001)]);
        assert_eq!(p.above(1).collect::<Vec<_>>(), [0b01010, 0b00100]);
        assert_eq!(p.above(4).count(), 0);
        assert!(Priority::of(&lanes(&[8, 1]), false).is_none());
        assert!(Priority::of(&lanes(&[8]), true).is_none());
        assert!(Priority::of(&lanes(&[2, 2, 2]), true).is_none());
    }
}
