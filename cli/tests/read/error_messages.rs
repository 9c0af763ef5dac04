//! Error messages name API that exists: `messages_name_only_real_api` reads
//! every string literal of the library (`src/`) and of the command
//! (`cli/src/`) that reads as a message (comments skipped; single words and
//! CTF metadata are not messages), picks out what looks like an API name — a
//! path with `::`, a name followed by `(`, a `snake_case` word — and every
//! command-line flag (`--name`), and fails when a name is not in
//! [`api_names`] (each entry there is a compile-time use of the item it
//! names, so the list cannot hold a name that does not exist), when a flag is
//! not in the `--help` of the tool's subcommands, or when the library names a
//! flag at all. A new message that names a function, type or flag that does
//! not exist fails this test. (The `Display` texts of the library's errors
//! are pinned byte for byte in the library's `tests/model/error_messages.rs`.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use qtrace::classes::ClassSpec;
use qtrace::export::ctf::CtfOptions;
use qtrace::queues::Dummy;
use qtrace::Tracer;

// The macros' messages quote `qtrace::event!` and `qtrace::scope!`: uses.
qtrace::classes! {
    static QTRACE_CHECK;
    mod qtrace_event_check: "the macros quoted by messages" {
        event E = "e": "an event" ();
        scope S = "s": "a scope" ();
    }
}

/// Every API name a message may quote, each with a use of the item that
/// compiles only if the item exists (renaming or removing it breaks this
/// file, which makes whoever does it fix the messages too).
fn api_names() -> BTreeSet<&'static str> {
    let _ = &QTRACE_CHECK;
    macro_rules! api {
        ($($name:literal => $item:expr),* $(,)?) => {{
            $( let _ = $item; )*
            BTreeSet::from([$($name),*])
        }};
    }
    api! {
        "register_queue_type" => Tracer::register_queue_type::<Dummy>,
        "Tracer::new" => Tracer::new,
        "Tracer::create_queue" => Tracer::create_queue::<Dummy>,
        "Tracer::define_class" => Tracer::define_class,
        "Tracer::activate" => Tracer::activate,
        "qtrace::global::get" => qtrace::global::get,
        "ClassSpec::event" => |s: ClassSpec| s.event("e", "d", &[]),
        "CtfOptions::packet_bytes" => |o: &CtfOptions| o.packet_bytes,
        "packet_bytes" => |o: &CtfOptions| o.packet_bytes,
        "high_water_percent" => |p: &qtrace::queues::OnlineParams| p.high_water_percent(),
        "sender_id" => |p: &qtrace::queues::UdpParams| p.sender_id(),
        "UdpParams::with_key" => qtrace::queues::UdpParams::with_key,
        "UdpParams::with_queue_counters" => qtrace::queues::UdpParams::with_queue_counters,
        "OnlineParams::with_queue_counters" => qtrace::queues::OnlineParams::with_queue_counters,
        "OnlineParams::with_rotation" => qtrace::queues::OnlineParams::with_rotation,
        "OnlineParams::with_retention" => qtrace::queues::OnlineParams::with_retention,
        "OnlineParams::with_file" => |p: qtrace::queues::OnlineParams| p.with_file("f"),
        "OnlineParams::with_writer" => |p: qtrace::queues::OnlineParams| p.with_writer(std::io::sink()),
        "DatagramKey::from_file" => |p: &str| qtrace::wire::DatagramKey::from_file(p),
        "UdpStats::abandoned_events" => |s: &qtrace::queues::UdpStats| s.abandoned_events,
        "Limit" => qtrace::queues::DatagramsPerPeriod::Limit,
        "Clock::manual" => qtrace::clock::Clock::manual,
        "Config::with_clock" => |c: qtrace::Config| c.with_clock(qtrace::clock::Clock::monotonic()),
        "ClockKind::Monotonic" => qtrace::clock::ClockKind::Monotonic,
        "RingStorage::FileAt" => qtrace::storage::RingStorage::FileAt,
        "RingStorage::Memory" => qtrace::storage::RingStorage::Memory,
        "Config::with_output_dir" => |c: qtrace::Config| c.with_output_dir("d"),
        "Tracer::assign_event" => Tracer::assign_event,
        "Tracer::assign_class" => Tracer::assign_class,
        "Tracer::filter_event" => Tracer::filter_event,
        "Tracer::filter_class" => Tracer::filter_class,
        "Filter::arg" => qtrace::filters::Filter::arg,
        "Snapshot::new" => qtrace::filters::Snapshot::new,
        "Scope::Queue" => qtrace::filters::Scope::Queue,
        "Trigger::after" => qtrace::filters::Trigger::after,
        "after" => qtrace::filters::Trigger::after,
        "Tracer::remove_trigger" => Tracer::remove_trigger,
        "post_run" => <qtrace::queues::AnyQueue as qtrace::queue::Queue>::post_run,
        "DatagramHeader::emit" => qtrace::wire::datagram::DatagramHeader::emit,
        "qtrace::reader::MergedReader" => |p: Vec<&str>| qtrace::reader::MergedReader::open(p),
        "qtrace::reader::TraceReader" => |p: &str| qtrace::reader::TraceReader::open(p),
        "TraceReader::event_class" => |r: &qtrace::reader::TraceReader| r.event_class(qtrace::EventId(0)).is_some(),
        "TraceReader::event_name" => |r: &qtrace::reader::TraceReader| r.event_name(qtrace::EventId(0)).is_some(),
        "Catalog::class_of" => qtrace::classes::Catalog::class_of,
        "Catalog::event_name" => qtrace::classes::Catalog::event_name,
        "TraceHeader::version" => qtrace::wire::TraceHeader::version,
        "qtrace::wire::DEFAULT_PORT" => qtrace::wire::DEFAULT_PORT,
        "define_classes" => Tracer::define_classes,
        "define_class" => Tracer::define_class,
        "qtrace::classes" => {
            qtrace::classes! { static C; mod m: "d" { event E = "e": "d" (); } }
            C.event_count()
        },
        // The deprecation notes of the previous release's paths.
        "qtrace::Tracer::activate" => Tracer::activate,
        "qtrace::Tracer::shutdown" => Tracer::shutdown,
        "qtrace::Tracer::with_config" => Tracer::with_config,
        "qtrace::log_event" => qtrace::log_event,
        "qtrace::control::Endpoint::bind" => |t: std::sync::Arc<Tracer>| qtrace::control::Endpoint::bind(t, "n"),
        "Config::with_control" => |c: qtrace::Config| c.with_control("n"),
        "qtrace::global::install" => qtrace::global::install,
        "qtrace::classes::Catalog::builtin" => qtrace::classes::Catalog::builtin,
        "class_of" => qtrace::classes::Catalog::class_of,
        "qtrace::filters::Action" => |a: qtrace::filters::Action| a,
        "qtrace::filters::Filter" => qtrace::filters::Filter::source,
        "qtrace::filters::FilterQueue" => |q: &qtrace::filters::FilterQueue| q.passed(),
        "qtrace::filters::GateQueue" => |q: &qtrace::filters::GateQueue| q.passed(),
        "qtrace::filters::Scope" => qtrace::filters::Scope::Global,
        "qtrace::filters::Snapshot" => qtrace::filters::Snapshot::new,
        "qtrace::filters::Trigger" => qtrace::filters::Trigger::start,
        "qtrace::filters::TriggerQueue" => |q: &qtrace::filters::TriggerQueue| q.seen(),
        "qtrace::queue::QueueCounters" => qtrace::queue::QueueCounters::default,
        "qtrace::queues::AnyQueue" => qtrace::queues::AnyQueue::as_fixed,
        "qtrace::queues::CircularParams::DEFAULT_SHARDS" => qtrace::queues::CircularParams::DEFAULT_SHARDS,
        "qtrace::queues::CircularParams::MAX_SHARDS" => qtrace::queues::CircularParams::MAX_SHARDS,
        "qtrace::storage::RingStorage" => qtrace::storage::RingStorage::Memory,
        "qtrace::event" => |t: &Tracer| qtrace::event!(t, qtrace_event_check::E),
        "qtrace::scope" => |t: &Tracer| drop(qtrace::scope!(t, qtrace_event_check::S)),
        "RttRing::init" => qtrace_core::stream::RttRing::<64>::init,
        "qtrace_core::stream::RttRing" => qtrace_core::stream::RttRing::<64>::write,
    }
}

/// Words in string literals that match the patterns but are no API name:
/// output formats and protocol field names, each with its reason.
const NOT_API: &[(&str, &str)] = &[
    (
        "uint64_t",
        "a CTF metadata type, in a CTF test's expected text",
    ),
    ("chunks_exact", "an `expect` message about a std call"),
    (
        "Region",
        "the `Debug` text of the queues' internal memory region",
    ),
    ("x86_64", "a CPU architecture, in the TSC clock's refusal"),
];

/// Names a file may use that are not qtrace's own: flags of another tool
/// that a message tells the user to run, each with the file that names it.
const ELSEWHERE: &[(&str, &str)] = &[
    // babeltrace2's own time-range flags, in `qtrace convert --split`'s hint.
    ("cli/src/commands/convert.rs", "--begin"),
    ("cli/src/commands/convert.rs", "--end"),
    // SQL's count(*), in `qtrace recv --store`'s suggested query.
    ("cli/src/commands/recv/store.rs", "count"),
    // Rust's attribute, in the declaration `recv --elf` asks for.
    ("cli/src/commands/recv/rtt.rs", "no_mangle"),
    // QEMU's QMP command, when `recv --rtt-qmp`'s negotiation fails.
    ("cli/src/commands/recv/rtt.rs", "qmp_capabilities"),
    // Linux's sysctl net.core.rmem_max, in `qtrace recv`'s socket-buffer warning.
    ("cli/src/commands/recv.rs", "rmem_max"),
];

fn elsewhere(file: &str, name: &str) -> bool {
    ELSEWHERE.contains(&(file, name))
}

/// A literal that reads as a message: words separated by spaces, not code
/// of another language (the CTF metadata, `name = value;`) and not a single
/// word (a path, a key, a platform name, a test's input).
fn is_message(lit: &str) -> bool {
    lit.contains(' ') && !lit.contains(" = ") && !lit.contains(":=")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The string literals of Rust source, comments skipped (a small lexer:
/// enough for this crate's sources, which it is tested on below).
fn string_literals(src: &str) -> Vec<String> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{1}', '"') or a lifetime.
                if b.get(i + 1) == Some(&b'\\') {
                    let end = src[i + 2..].find('\'').unwrap();
                    i += 2 + end + 1;
                } else if b.get(i + 2) == Some(&b'\'') {
                    i += 3;
                } else {
                    let c = src[i + 1..].chars().next().unwrap();
                    if src[i + 1 + c.len_utf8()..].starts_with('\'') {
                        i += 1 + c.len_utf8() + 1;
                    } else {
                        i += 1;
                    }
                }
            }
            b'r' if (b.get(i + 1) == Some(&b'#') || b.get(i + 1) == Some(&b'"'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                let open = i + 1 + hashes;
                if b.get(open) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let end = src[open + 1..].find(&close).unwrap() + open + 1;
                out.push(src[open + 1..end].to_string());
                i = end + close.len();
            }
            b'"' => {
                let mut s = String::new();
                i += 1;
                while b[i] != b'"' {
                    if b[i] == b'\\' {
                        match b[i + 1] {
                            b'n' => s.push('\n'),
                            b't' => s.push('\t'),
                            b'r' => s.push('\r'),
                            b'0' => s.push('\0'),
                            b'u' => {
                                // \u{…}: a character no API name has.
                                let close = src[i..].find('}').unwrap();
                                s.push('?');
                                i += close + 1;
                                continue;
                            }
                            b'\n' => {
                                // A line continuation: the newline and the
                                // next line's indentation are dropped.
                                i += 2;
                                while b[i] == b' ' {
                                    i += 1;
                                }
                                continue;
                            }
                            c => s.push(c as char),
                        }
                        i += 2;
                    } else {
                        let c = src[i..].chars().next().unwrap();
                        s.push(c);
                        i += c.len_utf8();
                    }
                }
                out.push(s);
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// Drops `{…}` format placeholders (`{{` and `}}` are literal braces).
fn without_placeholders(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '{' => {
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// What a message names: paths with `::`, names followed by `(`,
/// `snake_case` words (API candidates), and `--flags`.
fn named(message: &str) -> (Vec<String>, Vec<String>) {
    let m = without_placeholders(message);
    let b = m.as_bytes();
    let (mut api, mut flags) = (Vec::new(), Vec::new());
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'-' && b.get(i + 1) == Some(&b'-') && (i == 0 || !ident(b[i - 1])) {
            let start = i;
            i += 2;
            while i < b.len() && (ident(b[i]) || b[i] == b'-') {
                i += 1;
            }
            if i > start + 2 {
                flags.push(m[start..i].to_string());
            }
            continue;
        }
        if ident(b[i]) && !b[i].is_ascii_digit() && (i == 0 || !ident(b[i - 1])) {
            let start = i;
            loop {
                while i < b.len() && ident(b[i]) {
                    i += 1;
                }
                if m[i..].starts_with("::") && b.get(i + 2).is_some_and(|&c| ident(c)) {
                    i += 2;
                } else {
                    break;
                }
            }
            let word = &m[start..i];
            let path = word.contains("::");
            // `sender(s)` is a plural, not a call.
            let call = b.get(i) == Some(&b'(') && !m[i..].starts_with("(s)");
            let snake = word.contains('_') && word.chars().any(|c| c.is_ascii_lowercase());
            if path || call || snake {
                api.push(word.to_string());
            }
            continue;
        }
        i += 1;
    }
    (api, flags)
}

fn help_flags() -> BTreeSet<String> {
    let exe = env!("CARGO_BIN_EXE_qtrace");
    let mut flags = BTreeSet::new();
    // Every subcommand the tool lists under "Commands:" in its --help.
    let top = Command::new(exe).arg("--help").output().unwrap();
    let top = String::from_utf8_lossy(&top.stdout).into_owned();
    let subs: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|name| name != "help")
        .collect();
    assert!(subs.len() >= 5, "subcommands not found in: {top}");
    for sub in std::iter::once(None).chain(subs.iter().map(|s| Some(s.as_str()))) {
        let mut cmd = Command::new(exe);
        cmd.args(sub).arg("--help");
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "qtrace {sub:?} --help failed");
        flags.extend(named(&String::from_utf8_lossy(&out.stdout)).1);
    }
    flags
}

#[test]
fn the_lexer_finds_what_messages_name() {
    let src = r##"
        // "not_in_a_comment()"
        let c = '"'; let d = '\''; fn f<'a>(x: &'a str) {}
        write!(f, "use {x} with Tracer::create_queue, then \
                   define_class(spec) and --out {{FILE}}");
        let raw = r#"qtrace::global::get() "quoted""#;
    "##;
    let lits = string_literals(src);
    assert_eq!(
        lits,
        [
            "use {x} with Tracer::create_queue, then define_class(spec) and --out {{FILE}}",
            "qtrace::global::get() \"quoted\"",
        ]
    );
    assert_eq!(
        named(&lits[0]),
        (
            vec![
                "Tracer::create_queue".to_string(),
                "define_class".to_string()
            ],
            vec!["--out".to_string()]
        )
    );
    assert_eq!(named(&lits[1]).0, ["qtrace::global::get"]);
    // The message this test was written for: the old text fails it.
    assert_eq!(
        named("install once at start-up and use qtrace::global() afterwards").0,
        ["qtrace::global"]
    );
    assert!(!api_names().contains("qtrace::global"));
}

#[test]
fn messages_name_only_real_api() {
    // The repository root: this crate is its `cli/` folder.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ has a parent");
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("cli").join("src"), &mut files);
    rust_files(&root.join("core").join("src"), &mut files);
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("cli/src/main.rs"))
            && files.iter().any(|f| f.ends_with("src/lib.rs")),
        "the library's and the command's sources are not where this test looks: {}",
        root.display()
    );
    let api = api_names();
    let not_api: BTreeSet<&str> = NOT_API.iter().map(|(w, _)| *w).collect();
    let flags = help_flags();
    let mut wrong = Vec::new();
    let mut used_exceptions = BTreeSet::new();
    for file in &files {
        let src = std::fs::read_to_string(file).unwrap();
        let rel = file.strip_prefix(root).unwrap().display().to_string();
        let cli = rel.starts_with("cli/src/");
        for lit in string_literals(&src).into_iter().filter(|l| is_message(l)) {
            let (names, used_flags) = named(&lit);
            for n in names {
                if not_api.contains(n.as_str()) {
                    used_exceptions.insert(n.clone());
                }
                if elsewhere(&rel, &n) {
                    used_exceptions.insert(n.clone());
                }
                if !api.contains(n.as_str())
                    && !not_api.contains(n.as_str())
                    && !elsewhere(&rel, &n)
                {
                    wrong.push(format!("{rel}: {n:?} in {lit:?}"));
                }
            }
            for flag in used_flags {
                if elsewhere(&rel, &flag) {
                    used_exceptions.insert(flag);
                    continue;
                }
                if !cli {
                    wrong.push(format!(
                        "{rel}: the library names the command-line flag {flag} in {lit:?}"
                    ));
                } else if !flags.contains(&flag) {
                    wrong.push(format!("{rel}: no subcommand has {flag} ({lit:?})"));
                }
            }
        }
    }
    for word in NOT_API
        .iter()
        .map(|e| e.0)
        .chain(ELSEWHERE.iter().map(|e| e.1))
    {
        if !used_exceptions.contains(word) {
            wrong.push(format!(
                "{word:?} is listed as an exception but no message has it: remove it"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "messages name what does not exist (fix the message, or add the name to api_names() \
         with a use of the item):\n{}",
        wrong.join("\n")
    );
}
