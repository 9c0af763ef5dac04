//! The payloads table's columns.

#[allow(unused_imports)]
use super::*;

/// One payloads row.
#[derive(Clone, Debug)]
pub struct PayloadRow<'a> {
    /// The run's source.
    pub source: u32,
    /// The event the payload belongs to.
    pub event_id: u16,
    /// Key of the class name, if known.
    pub class: Option<i32>,
    /// Key of the event name, if known (none for name records).
    pub event: Option<i32>,
    /// Key of `str`, `bytes` or `name`.
    pub kind: i32,
    /// The event's own argument, if its begin record arrived.
    pub arg0: Option<u64>,
    /// Name records: key of what is named.
    pub name_of: Option<i32>,
    /// Name records: the number named.
    pub subject: Option<u64>,
    /// The payload as text (valid UTF-8).
    pub text: Option<&'a str>,
    /// The payload's bytes (not UTF-8).
    pub bytes: Option<&'a [u8]>,
    /// Whether the payload is whole.
    pub complete: bool,
    /// Key of `complete`, `partial` or `corrupt`.
    pub state: i32,
    /// Partial runs: records received.
    pub received: Option<u32>,
    /// Partial runs: records expected, if known.
    pub expected: Option<u32>,
    /// The length as logged, if known.
    pub logged_len: Option<u32>,
}

/// The payloads table's columns.
#[derive(Debug, Default)]
pub struct PayloadCols {
    common: Common,
    at: Position,
    source: Col<u32>,
    event_id: Col<u16>,
    class: Col<i32>,
    event: Col<i32>,
    kind: Col<i32>,
    arg0: Col<u64>,
    name_of: Col<i32>,
    subject: Col<u64>,
    text: Vec<Option<String>>,
    bytes: Vec<Option<Vec<u8>>>,
    complete: Vec<bool>,
    state: Col<i32>,
    received: Col<u32>,
    expected: Col<u32>,
    logged_len: Col<u32>,
}

impl PayloadCols {
    /// Appends a row.
    pub fn push(&mut self, k: &RunKeys, at: &At, r: &PayloadRow<'_>) {
        self.common.push(k);
        self.at.push(at);
        self.source.push(r.source);
        self.event_id.push(r.event_id);
        self.class.push_opt(r.class);
        self.event.push_opt(r.event);
        self.kind.push(r.kind);
        self.arg0.push_opt(r.arg0);
        self.name_of.push_opt(r.name_of);
        self.subject.push_opt(r.subject);
        self.text.push(r.text.map(str::to_string));
        self.bytes.push(r.bytes.map(<[u8]>::to_vec));
        self.complete.push(r.complete);
        self.state.push(r.state);
        self.received.push_opt(r.received);
        self.expected.push_opt(r.expected);
        self.logged_len.push_opt(r.logged_len);
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.complete.len()
    }

    /// Payload bytes held (to flush long texts early).
    pub fn bytes_held(&self) -> usize {
        let t: usize = self.text.iter().flatten().map(String::len).sum();
        let b: usize = self.bytes.iter().flatten().map(Vec::len).sum();
        t + b
    }

    /// Takes the rows as a batch.
    pub fn batch(&mut self, d: &Interner) -> Result<RecordBatch, ArrowError> {
        let mut a = self.common.arrays(d)?;
        a.extend(self.at.arrays());
        let text: StringArray = std::mem::take(&mut self.text).into_iter().collect();
        let bytes: BinaryArray = std::mem::take(&mut self.bytes).into_iter().collect();
        let complete = BooleanArray::from(std::mem::take(&mut self.complete));
        a.extend([
            self.source.primitive::<UInt32Type>(),
            self.event_id.primitive::<UInt16Type>(),
            self.class.dictionary(d)?,
            self.event.dictionary(d)?,
            self.kind.dictionary(d)?,
            self.arg0.primitive::<UInt64Type>(),
            self.name_of.dictionary(d)?,
            self.subject.primitive::<UInt64Type>(),
            Arc::new(text) as ArrayRef,
            Arc::new(bytes) as ArrayRef,
            Arc::new(complete) as ArrayRef,
            self.state.dictionary(d)?,
            self.received.primitive::<UInt32Type>(),
            self.expected.primitive::<UInt32Type>(),
            self.logged_len.primitive::<UInt32Type>(),
        ]);
        RecordBatch::try_new(Table::Payloads.schema(), a)
    }
}
