//! What each strategy sent at each call point, item by item: a [`Capture`] watches a replay (as its
//! [`Observer`]) and keeps, per strategy, how each of the episode's items fared — kept, masked (with the
//! placeholder that replaced it), truncated, rewritten, dropped or summarized — and the items and instructions
//! the strategy wrote itself (summaries), as changes from one call point to the next, not as copies.
//!
//! Where an item of the request sent comes from is followed, not guessed: the request handed to a strategy is
//! the one it sent last time with the recorded items appended, and the strategy's declared
//! [`Change`] says which items it kept as they were. Only the items after a rewrite's kept prefix are matched
//! to the items handed in: an identical item first, then (between two matches) the item with the same call id,
//! or the next one of the same type. Of two identical items, the first is taken for the one kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::history::{Episode, Item, ItemKind};
use crate::llm::LlmRequest;
use crate::replay::Observer;
use crate::strategy::{Applied, Change};
use crate::tokens::Tokenizer;

/// What became of an episode item in a strategy's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// As recorded.
    Kept,
    /// Replaced by a placeholder.
    Masked,
    /// Cut down to its head and tail.
    Truncated,
    /// Rewritten otherwise.
    Rewritten,
    /// Left out, the strategy said it dropped items.
    Dropped,
    /// Left out, the strategy said it summarized items.
    Summarized,
    /// Left out, the strategy reported dropping and summarizing items (which is which is not known).
    Removed,
}

impl State {
    /// The state's name in the page.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            State::Kept => "kept",
            State::Masked => "masked",
            State::Truncated => "truncated",
            State::Rewritten => "rewritten",
            State::Dropped => "dropped",
            State::Summarized => "summarized",
            State::Removed => "dropped or summarized",
        }
    }

    /// Every state, in the order the page numbers them.
    pub const ALL: [State; 7] = [
        State::Kept,
        State::Masked,
        State::Truncated,
        State::Rewritten,
        State::Dropped,
        State::Summarized,
        State::Removed,
    ];
}

/// From call point `step` on, an item is in `state`, with text `text` (an index into [`Texts`]) of `tokens`
/// tokens when the strategy rewrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    /// The call point.
    pub step: usize,
    /// What became of the item.
    pub state: State,
    /// The text it was rewritten to, when it was.
    pub text: Option<usize>,
    /// Its tokens then.
    pub tokens: usize,
}

/// An item or instruction a strategy wrote (a summary), in its requests from call point `from` to `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The first call point.
    pub from: usize,
    /// The last call point.
    pub to: usize,
    /// The episode item it follows in the request (`None`: first); instructions have none.
    pub after: Option<usize>,
    /// Its text, an index into [`Texts`].
    pub text: usize,
    /// Its kind.
    pub kind: ItemKind,
    /// Its tokens.
    pub tokens: usize,
}

/// One strategy's requests over an episode, as changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    /// Per episode item whose state ever changed, its transitions in call-point order (an item is kept from
    /// the call point it arrives at until its first transition).
    pub items: HashMap<usize, Vec<Transition>>,
    /// Items the strategy wrote into the contents.
    pub written: Vec<Written>,
    /// Instructions the strategy wrote (a summary before the contents).
    pub instructions: Vec<Written>,
}

/// Every distinct text of a page, each once.
#[derive(Debug, Default)]
pub struct Texts {
    index: HashMap<Arc<str>, usize>,
    /// The texts, by index.
    pub all: Vec<Arc<str>>,
}

impl Texts {
    /// The index of `text`, added when new.
    pub fn id(&mut self, text: &Arc<str>) -> usize {
        if let Some(&i) = self.index.get(text) {
            return i;
        }
        self.all.push(Arc::clone(text));
        self.index.insert(Arc::clone(text), self.all.len() - 1);
        self.all.len() - 1
    }

    /// The index of `text`, when it is one of the texts.
    #[must_use]
    pub fn get(&self, text: &str) -> Option<usize> {
        self.index.get(text).copied()
    }
}

/// Where an item of a request comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// Episode item `i`, as recorded.
    Item(usize),
    /// Episode item `i`, rewritten.
    From(usize),
    /// Written by the strategy.
    New,
}

impl Origin {
    fn item(self) -> Option<usize> {
        match self {
            Origin::Item(i) | Origin::From(i) => Some(i),
            Origin::New => None,
        }
    }
}

/// One strategy's replay as it goes.
#[derive(Debug, Default)]
struct Tracker {
    /// The origin of each item of the request last sent.
    origins: Vec<Origin>,
    /// The next episode item to be appended.
    next: usize,
    /// The current state of each item that is not kept as recorded, with its text.
    now: HashMap<usize, (State, Option<usize>)>,
    /// Written items and instructions in the request last sent, open (`to` not final).
    written: Vec<Written>,
    instructions: Vec<Written>,
    timeline: Timeline,
}

/// Watches the replays of one episode and keeps each strategy's [`Timeline`].
pub struct Capture<'e> {
    episode: &'e Episode,
    tokenizer: Arc<Tokenizer>,
    inner: Mutex<(Texts, HashMap<String, Tracker>)>,
}

impl<'e> Capture<'e> {
    /// A capture of the replays of `episode`; the episode's own texts are the first [`Texts`].
    #[must_use]
    pub fn new(episode: &'e Episode, tokenizer: Arc<Tokenizer>) -> Self {
        let mut texts = Texts::default();
        for item in &episode.items {
            texts.id(item.shared_text());
        }
        Self {
            episode,
            // Counted as the replay counts: at the k the episode's record was fitted with, where it was.
            tokenizer: crate::replay::unrecorded::counter(episode, &tokenizer),
            inner: Mutex::new((texts, HashMap::new())),
        }
    }

    /// The texts, and each strategy's timeline (its written items closed at its last call point).
    #[must_use]
    pub fn finish(self) -> (Texts, HashMap<String, Timeline>) {
        let (texts, trackers) = self
            .inner
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let timelines = trackers
            .into_iter()
            .map(|(name, mut t)| {
                t.timeline.written.append(&mut t.written);
                t.timeline.instructions.append(&mut t.instructions);
                (name, t.timeline)
            })
            .collect();
        (texts, timelines)
    }
}

/// What an item handed in became in the request sent: its state, its text's id when rewritten, its tokens.
type Seen = (State, Option<usize>, usize);

/// An item a strategy wrote into a request: the episode item it follows, its text's id, the item.
type New<'s> = (Option<usize>, usize, &'s Item);

impl Observer for Capture<'_> {
    fn observe(
        &self,
        strategy: &str,
        step: usize,
        handed_in: &LlmRequest,
        sent: &LlmRequest,
        applied: &Applied,
    ) {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (texts, trackers) = &mut *inner;
        let t = trackers.entry(strategy.to_owned()).or_default();
        t.follow(&self.episode.items, handed_in.contents.len());
        let origins = origins_sent(
            &handed_in.contents,
            &t.origins,
            &sent.contents,
            &applied.change,
        );
        let (seen, written) = self.sort_sent(t, texts, sent, &origins, applied);
        self.record(t, step, &seen, applied);
        let written: Vec<Written> = written
            .into_iter()
            .map(|(after, text, item)| Written {
                from: step,
                to: step,
                after,
                text,
                kind: item.kind(),
                tokens: self.tokenizer.count_item(item),
            })
            .collect();
        let instructions: Vec<Written> = sent
            .instructions
            .iter()
            .map(|s| {
                let text: Arc<str> = Arc::from(s.as_str());
                Written {
                    from: step,
                    to: step,
                    after: None,
                    text: texts.id(&text),
                    kind: ItemKind::Summary,
                    tokens: self.tokenizer.count_instruction(s),
                }
            })
            .collect();
        carry(&mut t.written, written, &mut t.timeline.written);
        carry(
            &mut t.instructions,
            instructions,
            &mut t.timeline.instructions,
        );
        t.origins = origins;
    }
}

impl Tracker {
    /// The origins of a request of `len` contents: the items recorded since the last call point were appended
    /// to the request it sent.
    fn follow(&mut self, items: &[Item], len: usize) {
        self.origins.truncate(len);
        while self.origins.len() < len {
            while self.next < items.len() && !items[self.next].is_sent() {
                self.next += 1;
            }
            self.origins.push(Origin::Item(self.next));
            self.next += 1;
        }
    }
}

impl Capture<'_> {
    /// What each episode item in `sent` became (kept, or rewritten with its text's id and tokens), and the items
    /// the strategy wrote, each after the episode item it follows.
    fn sort_sent<'s>(
        &self,
        t: &Tracker,
        texts: &mut Texts,
        sent: &'s LlmRequest,
        origins: &[Origin],
        applied: &Applied,
    ) -> (HashMap<usize, Seen>, Vec<New<'s>>) {
        let items = &self.episode.items;
        let mut seen: HashMap<usize, Seen> = HashMap::new();
        let mut written = Vec::new();
        let mut after = None;
        for (item, origin) in sent.contents.iter().zip(origins) {
            match *origin {
                Origin::Item(i) => {
                    seen.insert(i, (State::Kept, None, 0));
                    after = Some(i);
                }
                Origin::From(i) => {
                    let text = texts.id(item.shared_text());
                    // A rewrite carried over from an earlier call point keeps what it was then.
                    let state = match t.now.get(&i) {
                        Some(&(state, Some(was))) if was == text => state,
                        _ => rewrite(&items[i], item, applied),
                    };
                    seen.insert(i, (state, Some(text), self.tokenizer.count_item(item)));
                    after = Some(i);
                }
                Origin::New => written.push((after, texts.id(item.shared_text()), item)),
            }
        }
        (seen, written)
    }

    /// A transition at `step` for every item handed in whose state changed: kept, rewritten, or gone (dropped
    /// or summarized as the change says).
    fn record(&self, t: &mut Tracker, step: usize, seen: &HashMap<usize, Seen>, applied: &Applied) {
        let items = &self.episode.items;
        let removed = match (applied.dropped_items > 0, applied.summarized_items > 0) {
            (true, false) => State::Dropped,
            (false, true) => State::Summarized,
            _ => State::Removed,
        };
        for i in t.origins.iter().filter_map(|o| o.item()) {
            let (state, text, tokens) = seen.get(&i).copied().unwrap_or((removed, None, 0));
            let was = t.now.get(&i).copied().unwrap_or((State::Kept, None));
            if (state, text) == was {
                continue;
            }
            let tokens = if state == State::Kept {
                self.tokenizer.count_item(&items[i])
            } else {
                tokens
            };
            t.timeline.items.entry(i).or_default().push(Transition {
                step,
                state,
                text,
                tokens,
            });
            if state == State::Kept {
                t.now.remove(&i);
            } else {
                t.now.insert(i, (state, text));
            }
        }
    }
}

/// Extends the open written items still in the request to `now`'s step, closes the others into `done`, and
/// opens the new ones.
fn carry(open: &mut Vec<Written>, now: Vec<Written>, done: &mut Vec<Written>) {
    let mut still = Vec::with_capacity(now.len());
    for w in now {
        match open
            .iter()
            .position(|o| o.text == w.text && o.after == w.after)
        {
            Some(i) => {
                let mut o = open.swap_remove(i);
                o.to = w.to;
                still.push(o);
            }
            None => still.push(w),
        }
    }
    done.append(open);
    *open = still;
}

/// What a rewrite of `original` into `now` is: a placeholder, a truncation (the head kept) or another
/// rewrite.
fn rewrite(original: &Item, now: &Item, applied: &Applied) -> State {
    if !(original.is_tool_output() || matches!(original, Item::ToolCall { .. })) {
        return State::Rewritten;
    }
    if applied.truncated_items == 0 {
        return State::Masked;
    }
    let (was, is) = (original.text(), now.text());
    let head: String = was.chars().take(32).collect();
    if is.len() < was.len() && !head.is_empty() && is.starts_with(&head) {
        State::Truncated
    } else {
        State::Masked
    }
}

/// The origin of each item of `sent`, from the items `handed_in` and their `origins`, as far as `change`
/// says, matched beyond that.
fn origins_sent(
    handed_in: &[Item],
    origins: &[Origin],
    sent: &[Item],
    change: &Change,
) -> Vec<Origin> {
    match change {
        Change::Unchanged if sent.len() == handed_in.len() => origins.to_vec(),
        Change::Dropped(kept)
            if kept.len() == handed_in.len()
                && kept.iter().filter(|&&k| k).count() == sent.len() =>
        {
            origins
                .iter()
                .zip(kept)
                .filter(|(_, &k)| k)
                .map(|(o, _)| *o)
                .collect()
        }
        Change::Rewrote { kept_prefix }
            if *kept_prefix <= handed_in.len() && *kept_prefix <= sent.len() =>
        {
            let p = *kept_prefix;
            let mut out = origins[..p].to_vec();
            out.extend(matched(&handed_in[p..], &origins[p..], &sent[p..]));
            out
        }
        _ => matched(handed_in, origins, sent),
    }
}

/// The origins of `sent`'s items, matched to the items `handed_in` (with their `origins`): identical items
/// first, in order; then, for each item left, among the items handed in between its matched neighbours, the
/// one with its call id or else the next one of its type.
fn matched(handed_in: &[Item], origins: &[Origin], sent: &[Item]) -> Vec<Origin> {
    let mut positions: HashMap<&Item, Vec<usize>> = HashMap::new();
    for (i, item) in handed_in.iter().enumerate().rev() {
        positions.entry(item).or_default().push(i);
    }
    let mut from = vec![None; sent.len()];
    let mut cursor = 0;
    for (j, item) in sent.iter().enumerate() {
        if let Some(stack) = positions.get_mut(item) {
            while stack.last().is_some_and(|&i| i < cursor) {
                stack.pop();
            }
            if let Some(i) = stack.pop() {
                from[j] = Some(i);
                cursor = i + 1;
            }
        }
    }
    let mut used: Vec<bool> = vec![false; handed_in.len()];
    for i in from.iter().flatten() {
        used[*i] = true;
    }
    let mut out = Vec::with_capacity(sent.len());
    let mut low = 0;
    for (j, item) in sent.iter().enumerate() {
        if let Some(i) = from[j] {
            out.push(origins[i]);
            low = i + 1;
            continue;
        }
        let high = from[j + 1..]
            .iter()
            .flatten()
            .next()
            .copied()
            .unwrap_or(handed_in.len());
        let window = low..high.max(low);
        let same_type = |c: &Item| std::mem::discriminant(c) == std::mem::discriminant(item);
        let found = item
            .call_id()
            .and_then(|id| {
                window.clone().find(|&i| {
                    !used[i] && handed_in[i].call_id() == Some(id) && same_type(&handed_in[i])
                })
            })
            .or_else(|| {
                window.clone().find(|&i| {
                    !used[i]
                        && same_type(&handed_in[i])
                        && handed_in[i].call_id().is_none()
                        && !item.is_summary()
                })
            });
        match found {
            Some(i) => {
                used[i] = true;
                low = i + 1;
                out.push(match origins[i] {
                    Origin::Item(k) | Origin::From(k) => Origin::From(k),
                    Origin::New => Origin::New,
                });
            }
            None => out.push(Origin::New),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items() -> Vec<Item> {
        vec![
            Item::system("sys"),
            Item::user("task"),
            Item::tool_call("c1", "run", "{}"),
            Item::tool_result("c1", "run", "out one"),
            Item::assistant("same"),
            Item::tool_call("c2", "run", "{}"),
            Item::tool_result("c2", "run", "out two"),
        ]
    }

    #[test]
    fn rewrites_are_matched_by_call_id_and_new_items_are_written() {
        let before = items();
        let origins: Vec<Origin> = (0..before.len()).map(Origin::Item).collect();
        let mut sent = before.clone();
        sent[3] = Item::tool_result("c1", "run", "[masked]");
        sent.remove(4);
        sent.insert(2, Item::user("[Previous work summary]\nfound things"));
        let got = matched(&before, &origins, &sent);
        assert_eq!(
            got,
            vec![
                Origin::Item(0),
                Origin::Item(1),
                Origin::New,
                Origin::Item(2),
                Origin::From(3),
                Origin::Item(5),
                Origin::Item(6),
            ]
        );
        // A declared drop is taken as declared.
        let kept = vec![true, true, false, false, true, true, true];
        let dropped: Vec<Item> = before
            .iter()
            .zip(&kept)
            .filter(|(_, &k)| k)
            .map(|(i, _)| i.clone())
            .collect();
        assert_eq!(
            origins_sent(&before, &origins, &dropped, &Change::Dropped(kept)),
            [0, 1, 4, 5, 6].map(Origin::Item)
        );
    }

    #[test]
    fn a_masked_item_records_its_placeholder_and_a_drop_its_cause() {
        let episode = Episode {
            id: "e".into(),
            items: items(),
            ..Episode::default()
        };
        let capture = Capture::new(&episode, Tokenizer::shared_default().unwrap());
        let before = LlmRequest::from_contents(items()[..4].to_vec());
        let mut sent = before.clone();
        sent.contents[3] = Item::tool_result("c1", "run", "[masked]");
        let mut applied = Applied::new(Change::Rewrote { kept_prefix: 3 });
        applied.compacted_items = 1;
        capture.observe("s", 0, &before, &sent, &applied);
        // The next call point: the rest appended, the masked result dropped.
        let mut before = sent.clone();
        before.contents.extend(items()[4..].iter().cloned());
        let kept = vec![true, true, true, false, true, true, true];
        let sent = LlmRequest::from_contents(
            before
                .contents
                .iter()
                .zip(&kept)
                .filter(|(_, &k)| k)
                .map(|(i, _)| i.clone())
                .collect(),
        );
        let mut applied = Applied::new(Change::Dropped(kept));
        applied.dropped_items = 1;
        capture.observe("s", 1, &before, &sent, &applied);
        let (texts, timelines) = capture.finish();
        let t = &timelines["s"].items[&3];
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].step, t[0].state), (0, State::Masked));
        assert_eq!(&*texts.all[t[0].text.unwrap()], "[masked]");
        assert_eq!(
            (t[1].step, t[1].state, t[1].text),
            (1, State::Dropped, None)
        );
        assert_eq!(timelines["s"].items.len(), 1, "the others were kept");
    }
}
