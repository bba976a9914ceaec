//! Which llama.cpp slot a conversation's requests take (`id_slot`), on a server with several
//! (`/props` `total_slots`). A slot holds one prompt cache: left to itself the server gives a
//! child (a `task`'s) the slot whose cache is most like its prompt, its parent's, whose whole
//! history is then read again at the parent's next request. So a session keeps one slot, taken
//! in turn as sessions come, and its children take the next one. The turn starts at a slot
//! drawn from the process id, so two mm processes on one server do not both queue their first
//! session on slot 0 while the others stay free.

use std::sync::{Mutex, PoisonError};

use crate::Conversation;

/// Sessions remembered, the oldest forgotten first (a forgotten one is given a slot again).
const REMEMBERED: usize = 64;

#[derive(Default)]
pub(crate) struct Slots(Mutex<Taken>);

impl Slots {
    /// The slots of this process: the turn starts at its id.
    pub(crate) fn for_process() -> Slots {
        Slots::starting_at(std::process::id())
    }

    /// The turn starts at `first` (modulo the server's slots).
    pub(crate) fn starting_at(first: u32) -> Slots {
        Slots(Mutex::new(Taken {
            sessions: Vec::new(),
            next: first,
        }))
    }
}

#[derive(Default)]
struct Taken {
    /// Sessions and their slots, the most recently given last.
    sessions: Vec<(String, u32)>,
    next: u32,
}

impl Slots {
    /// The slot for `conversation` on a server with `total` slots; `None` with fewer than two.
    pub(crate) fn of(&self, conversation: &Conversation, total: u32) -> Option<u32> {
        if total < 2 {
            return None;
        }
        let session = conversation.parent.as_deref().unwrap_or(&conversation.id);
        let mut taken = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let own = match taken.sessions.iter().find(|(id, _)| id == session) {
            Some((_, slot)) => *slot % total,
            None => {
                let slot = taken.next % total;
                taken.next = slot + 1;
                if taken.sessions.len() >= REMEMBERED {
                    taken.sessions.remove(0);
                }
                taken.sessions.push((session.to_string(), slot));
                slot
            }
        };
        Some(match conversation.parent {
            Some(_) => (own + 1) % total,
            None => own,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn session(id: &str) -> Conversation {
        Conversation {
            id: id.to_string(),
            parent: None,
        }
    }

    fn child(parent: &str) -> Conversation {
        Conversation {
            id: format!("{parent}/call"),
            parent: Some(parent.to_string()),
        }
    }

    #[test]
    fn the_turn_starts_where_the_process_says() {
        // Two processes whose ids differ by one take two slots for their first sessions.
        assert_eq!(Slots::starting_at(7).of(&session("a"), 2), Some(1));
        assert_eq!(Slots::starting_at(8).of(&session("a"), 2), Some(0));
        assert_eq!(Slots::starting_at(u32::MAX).of(&session("a"), 4), Some(3));
        let slots = Slots::starting_at(u32::MAX);
        slots.of(&session("a"), 4);
        assert_eq!(slots.of(&session("b"), 4), Some(0));
    }

    #[test]
    fn a_session_keeps_its_slot_and_its_child_takes_another() {
        let slots = Slots::default();
        assert_eq!(slots.of(&session("a"), 2), Some(0));
        assert_eq!(slots.of(&child("a"), 2), Some(1));
        assert_eq!(slots.of(&session("a"), 2), Some(0));
        // The next session takes the next slot; its child the one after, round.
        assert_eq!(slots.of(&session("b"), 2), Some(1));
        assert_eq!(slots.of(&child("b"), 2), Some(0));
        // The count the server says now: the turn goes on from where it was.
        assert_eq!(slots.of(&session("c"), 4), Some(2));
        assert_eq!(slots.of(&child("c"), 4), Some(3));
    }

    #[test]
    fn one_slot_or_an_unknown_count_takes_none() {
        let slots = Slots::default();
        assert_eq!(slots.of(&session("a"), 1), None);
        assert_eq!(slots.of(&child("a"), 0), None);
    }

    #[test]
    fn a_child_seen_first_gives_its_parent_a_slot() {
        let slots = Slots::default();
        assert_eq!(slots.of(&child("a"), 3), Some(1));
        assert_eq!(slots.of(&session("a"), 3), Some(0));
        assert_eq!(slots.of(&session("b"), 3), Some(1));
    }
}
