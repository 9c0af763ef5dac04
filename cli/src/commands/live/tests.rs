//! The live view's model (exact figures from hand-made event sequences) and
//! its drawing (ratatui's `TestBackend`: the cells and lines drawn).

use std::time::Duration;

use qtrace::classes::{semaphore, system, tracer, user, Catalog};
use qtrace::receiver::{ReceiverSummary, RefusedSource, SenderSummary};
use qtrace::Event;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use ratatui::Terminal;

use super::model::{CpuRow, Health, Model, SenderRow, SortBy, TaskRow};
use super::view::{self, Status};

const S: Duration = Duration::from_secs(1);

fn ev(t: u64, id: qtrace::EventId, source: u32, task: u64) -> Event {
    Event::new(t, id, source, [task, 0])
}

/// Two CPUs, four tasks: a preemption, two jobs, a blocking wait.
fn schedule() -> Vec<Event> {
    vec![
        ev(0, system::ACTIVATE, 0, 1),
        ev(100, system::SCHEDULE, 0, 1),
        ev(300, system::ACTIVATE, 0, 2),
        ev(300, system::SCHEDULE, 0, 2), // task 1 preempted
        ev(500, system::ENDCYCLE, 0, 2), // task 2: response 200
        ev(500, system::SCHEDULE, 0, 1),
        ev(700, system::ENDCYCLE, 0, 1), // task 1: response 700
        ev(1000, system::SCHEDULE, 1, 3),
        ev(1100, semaphore::WAIT, 1, 3),
        ev(1100, system::SCHEDULE, 1, 4), // task 3 blocked...
        ev(1400, system::SCHEDULE, 1, 3), // ...for 300 ns
    ]
}

fn model_of(events: &[Event]) -> Model {
    let mut m = Model::new(Catalog::builtin(), S, 1_000_000);
    for e in events {
        m.push(e);
    }
    m
}

fn task(task: u64, cpu_permille: u64, activations: u64, resp: u64, jobs: u64) -> TaskRow {
    TaskRow {
        task,
        cpu_permille,
        activations,
        p50: resp,
        p99: resp,
        max: resp,
        jobs,
        preemptions: 0,
        blocked_ns: 0,
    }
}

#[test]
fn the_window_gives_the_analysis_figures_per_task_and_cpu() {
    let s = model_of(&schedule()).snapshot();
    assert_eq!((s.span_ns, s.events, s.lost), (1400, 11, 0));
    // CPU time over the 1400 ns span, largest first.
    let t1 = TaskRow {
        preemptions: 1,
        ..task(1, 285, 1, 700, 1) // ran 100..300 and 500..700
    };
    let t3 = TaskRow {
        blocked_ns: 300,
        ..task(3, 71, 0, 0, 0) // ran 1000..1100
    };
    assert_eq!(
        s.tasks,
        [t1, task(4, 214, 0, 0, 0), task(2, 142, 1, 200, 1), t3]
    );
    // CPU 0 busy 600 of 1400 ns, CPU 1 400 of 1400.
    assert_eq!(
        s.cpus,
        [
            CpuRow {
                source: 0,
                busy_permille: 428
            },
            CpuRow {
                source: 1,
                busy_permille: 285
            }
        ]
    );
}

#[test]
fn sort_and_task_filter_choose_the_rows() {
    let mut m = model_of(&schedule());
    let order = |m: &Model| {
        m.snapshot()
            .tasks
            .iter()
            .map(|t| t.task)
            .collect::<Vec<_>>()
    };
    m.sort = SortBy::Task;
    assert_eq!(order(&m), [1, 2, 3, 4]);
    m.sort = SortBy::Response;
    assert_eq!(order(&m), [1, 2, 3, 4]); // 700, 200, none, none
    m.sort = SortBy::Blocked;
    assert_eq!(order(&m), [3, 1, 2, 4]);
    m.sort = SortBy::Preemptions;
    assert_eq!(order(&m), [1, 2, 3, 4]);
    assert_eq!(SortBy::Blocked.next(), SortBy::Cpu);
    // `t`: all, then each task in turn, then all again.
    let shown = m.snapshot_tasks();
    for want in [Some(1), Some(2), Some(3), Some(4), None] {
        m.next_task(&shown);
        assert_eq!(m.task, want);
    }
    m.next_task(&shown);
    assert_eq!(order(&m), [1]);
}

#[test]
fn a_task_running_across_the_window_start_keeps_its_cpu_time() {
    let mut m = Model::new(Catalog::builtin(), Duration::from_nanos(1000), 1_000_000);
    m.push(&ev(0, system::SCHEDULE, 0, 1));
    m.push(&ev(500, user::USER0, 5, 0));
    m.push(&ev(2000, user::USER0, 5, 0)); // both earlier events leave the window
    let s = m.snapshot();
    // The window is 1000..2000; task 1 ran all of it.
    assert_eq!((s.span_ns, s.events), (1000, 1));
    assert_eq!(s.tasks, [task(1, 1000, 0, 0, 0)]);
    assert_eq!(
        s.cpus,
        [CpuRow {
            source: 0,
            busy_permille: 1000
        }]
    );
}

#[test]
fn past_max_events_the_window_is_the_newest_events() {
    let mut m = Model::new(Catalog::builtin(), S, 2);
    m.push(&ev(0, system::SCHEDULE, 0, 1));
    m.push(&ev(10, system::SCHEDULE, 0, 2));
    m.push(&ev(20, user::USER0, 5, 0)); // the first schedule leaves
    let s = m.snapshot();
    assert_eq!((s.span_ns, s.events), (20, 2));
    assert_eq!(s.tasks, [task(1, 500, 0, 0, 0), task(2, 500, 0, 0, 0)]);
}

#[test]
fn losses_in_the_window_and_the_file_row() {
    let mut m = model_of(&[]);
    m.file_tick("a.qtr", Duration::ZERO, false);
    for t in 0..9 {
        m.push(&ev(t, user::USER0, 0, t));
    }
    m.push(&Event::new(9, tracer::HOOPS, 0, [4, 0]));
    m.file_tick("a.qtr", Duration::from_millis(500), false);
    let s = m.snapshot();
    assert_eq!((s.events, s.lost), (9, 4));
    let row = SenderRow {
        name: "a.qtr".into(),
        events: 10,     // records: 9 events and the hoops record
        rate: Some(20), // 10 in 0.5 s
        lost: 4,
        health: Health::Open,
    };
    assert_eq!(s.senders, [row]);
    m.file_tick("a.qtr", Duration::from_millis(1500), true);
    let s = m.snapshot();
    assert_eq!(s.senders[0].health, Health::Closed);
    assert_eq!(s.senders[0].rate, Some(0)); // closed
}

fn sender(port: u16, id: u32, events: u64) -> SenderSummary {
    SenderSummary {
        addr: ([127, 0, 0, 1], port).into(),
        sender: id,
        queue: None,
        datagrams: 1,
        events,
        lost_datagrams: 0,
        lost_events: 0,
        duplicates: 0,
        reordered: 0,
        late: 0,
        invalid: 0,
        sender_dropped: 0,
        unsent: 0,
        has_catalog: false,
        closed: false,
        logged: None,
        key_id: None,
    }
}

#[test]
fn senders_get_rates_losses_and_health() {
    let mut m = model_of(&[]);
    let at = |events: [u64; 3], elapsed: Duration| ReceiverSummary {
        elapsed,
        senders: vec![
            SenderSummary {
                sender_dropped: 3,
                lost_events: 2,
                ..sender(4000, 1, events[0])
            },
            SenderSummary {
                closed: true,
                ..sender(4001, 2, events[1])
            },
            sender(4002, 3, events[2]),
        ],
        refused: vec![RefusedSource {
            addr: ([127, 0, 0, 1], 4003).into(),
            sender: 9,
            datagrams: 2,
            events: 60,
        }],
        ..ReceiverSummary::default()
    };
    m.senders(&at([100, 50, 7], Duration::ZERO));
    // Less than half a second of samples: no rate yet.
    m.senders(&at([200, 50, 7], Duration::from_millis(400)));
    assert_eq!(m.snapshot().senders[0].rate, None);
    m.senders(&at([300, 50, 7], S));
    m.senders(&at([500, 50, 7], 2 * S));
    let s = m.snapshot();
    let row = |name: &str, events, rate, lost, health| SenderRow {
        name: name.into(),
        events,
        rate,
        lost,
        health,
    };
    assert_eq!(
        s.senders,
        [
            row("127.0.0.1:4000 #1", 500, Some(200), 5, Health::Open),
            row("127.0.0.1:4001 #2", 50, Some(0), 0, Health::Closed),
            // Silent for 2 s without a close.
            row("127.0.0.1:4002 #3", 7, Some(0), 0, Health::Unclosed),
            row("127.0.0.1:4003 #9", 0, Some(0), 60, Health::Refused),
        ]
    );
}

#[test]
fn recent_events_of_the_chosen_class() {
    let mut m = model_of(&schedule());
    m.push(&Event::new(2_000_000_000, user::USER3, 2, [5, 7]));
    let s = m.snapshot();
    assert_eq!(s.class, "system");
    assert_eq!(s.recent.len(), 10); // the schedule's system events
    assert_eq!(s.recent[9], "      0.000001     1  schedule task=3");
    m.next_class(); // the next class (by number) with events: user
    let s = m.snapshot();
    assert_eq!(s.class, "user");
    assert_eq!(s.recent, ["      2.000000     2  user3 value=5 arg1=7"]);
    m.next_class();
    assert_eq!(m.snapshot().class, "semaphore");
    m.next_class(); // back to the first
    assert_eq!(m.snapshot().class, "system");
}

fn status() -> Status {
    Status {
        source: "listening on 127.0.0.1:5510".into(),
        window_s: 2.0,
        sort: "cpu",
        task: None,
        paused: false,
        ended: false,
    }
}

/// The drawn screen as lines.
fn screen(t: &Terminal<TestBackend>) -> Vec<String> {
    let b = t.backend().buffer();
    (0..b.area.height)
        .map(|y| {
            (0..b.area.width)
                .map(|x| b[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect()
}

#[test]
fn the_terminal_view_draws_tasks_cpus_senders_and_events() {
    let mut m = model_of(&schedule());
    m.senders(&ReceiverSummary {
        senders: vec![SenderSummary {
            sender_dropped: 5,
            ..sender(4000, 1, 11)
        }],
        ..ReceiverSummary::default()
    });
    let snap = m.snapshot();
    let mut t = Terminal::new(TestBackend::new(100, 30)).unwrap();
    t.draw(|f| view::draw(f, &snap, &status())).unwrap();
    let lines = screen(&t);
    assert_eq!(
        lines[0].trim_end(),
        "listening on 127.0.0.1:5510  window 2.0s (1.4us of trace)  11 events"
    );
    assert!(lines[1].starts_with("┌Tasks"), "{}", lines[1]);
    let row = |task: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("│{task} ")))
            .unwrap_or_else(|| panic!("no row of task {task}: {lines:#?}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("task"),
        [
            "│task", "cpu", "act", "resp", "p50", "resp", "p99", "resp", "max", "preempt",
            "blocked", "│"
        ]
    );
    assert_eq!(
        row("1"),
        ["│1", "28.5%", "1", "700ns", "700ns", "700ns", "1", "0ns", "│"]
    );
    assert_eq!(
        row("3"),
        ["│3", "7.1%", "0", "-", "-", "-", "0", "300ns", "│"]
    );
    let joined = lines.join("\n");
    assert!(joined.contains("│cpu 0  42.8%    cpu 1  28.5%"), "{joined}");
    let sender_line = lines
        .iter()
        .position(|l| l.contains("127.0.0.1:4000 #1"))
        .expect("the sender row");
    let words: Vec<&str> = lines[sender_line].split_whitespace().collect();
    assert!(
        words
            .windows(5)
            .any(|w| w == ["#1", "11", "-", "5", "open"]),
        "{}",
        lines[sender_line]
    );
    // The loss is highlighted: red; the event count beside it is not.
    let b = t.backend().buffer();
    let y = sender_line as u16;
    let cells: Vec<&str> = (0..b.area.width).map(|x| b[(x, y)].symbol()).collect();
    let lost_x = (0..b.area.width)
        .rev()
        .find(|&x| cells[x as usize] == "5")
        .unwrap();
    assert_eq!(b[(lost_x, y)].fg, Color::Red);
    let events_x = (0..b.area.width)
        .find(|&x| cells[x as usize] == "1" && cells[x as usize + 1] == "1")
        .unwrap();
    assert_eq!(b[(events_x, y)].fg, Color::Reset);
    assert!(joined.contains("┌Recent system events"), "{joined}");
    assert!(
        joined.contains("0.000001     1  schedule task=3"),
        "{joined}"
    );
    assert_eq!(
        lines[29].trim_end(),
        "q quit  p pause  s sort: cpu  c class: system  t task: all"
    );
}

#[test]
fn the_plain_text_summary_says_the_same() {
    let mut m = model_of(&schedule());
    // A loss at the end: CPU 0's idle span up to it (700..1400) is left
    // out (the analysis's rule), so CPU 0 is busy 600 of 700 ns.
    m.push(&Event::new(1400, tracer::HOOPS, 0, [4, 0]));
    let mut st = status();
    st.paused = true;
    st.ended = true;
    st.task = Some(1);
    m.task = Some(1);
    let text = view::plain(&m.snapshot(), &st);
    assert_eq!(
        text,
        "listening on 127.0.0.1:5510  window 2.0s (1.4us of trace)  11 events, 4 lost  PAUSED  ENDED\n\
         task 1  cpu 28.5%  act 1  resp p50 700ns p99 700ns max 700ns  preempt 1  blocked 0ns\n\
         cpu 0  busy 85.7%\n\
         cpu 1  busy 28.5%\n\n"
    );
    assert_eq!(view::dur(1_500_000_000), "1.50s");
    assert_eq!(view::dur(3_200_000), "3.20ms");
    assert_eq!(view::dur(12_500), "12.5us");
}

#[test]
fn after_a_jump_ahead_the_window_starts_again() {
    let mut m = model_of(&schedule());
    m.gap(); // the input skipped events: nothing before is contiguous with what follows
    m.push(&ev(5000, system::SCHEDULE, 0, 7));
    m.push(&ev(5400, system::ENDCYCLE, 0, 7));
    let s = m.snapshot();
    assert_eq!((s.span_ns, s.events), (400, 2));
    assert_eq!(s.tasks, [task(7, 1000, 0, 0, 0)]);
}

#[test]
fn short_figures_parse_back_within_their_rounding() {
    use super::fit::{parse_short, short};
    assert_eq!(short(14_932, 5).as_deref(), Some("14932"));
    assert_eq!(short(14_932, 4).as_deref(), Some("15k"));
    assert_eq!(short(149_320, 4).as_deref(), Some("149k"));
    assert_eq!(short(149_320, 5).as_deref(), Some("149k"));
    assert_eq!(short(7_460_123, 5).as_deref(), Some("7.46M"));
    assert_eq!(short(7_460_123, 4).as_deref(), Some("7.5M"));
    assert_eq!(short(7_460_123, 2).as_deref(), Some("7M"));
    assert_eq!(short(58_660, 4).as_deref(), Some("59k"));
    assert_eq!(short(999_999, 5).as_deref(), Some("1.00M")); // not 1000k
    assert_eq!(short(999_499, 5).as_deref(), Some("999k"));
    assert_eq!(short(u64::MAX, 5).as_deref(), Some("18.4E"));
    assert_eq!(short(123_456, 1), None);
    assert_eq!(parse_short("14.9k"), Some((14_900, 50)));
    assert_eq!(parse_short("7.46M"), Some((7_460_000, 5_000)));
    assert_eq!(parse_short("999"), Some((999, 0)));
    // Every form of many figures reads back within its rounding.
    let mut n: u64 = 1;
    while n < u64::MAX / 8 {
        for v in [n, n + 1, n * 2 - 1, n * 3 + 7, u64::MAX - n] {
            for width in 2..=6 {
                let Some(s) = short(v, width) else { continue };
                assert!(s.len() <= width, "{v} in {width}: {s}");
                let (back, within) = parse_short(&s).unwrap();
                assert!(back.abs_diff(v) <= within, "{v} as {s}: {back} ± {within}");
            }
        }
        n = n * 7 + 3;
    }
}

#[test]
fn narrow_tables_shorten_counts_then_drop_columns_in_order() {
    use super::fit::{fit_columns, Cell, Column};
    let col = |header, drop, narrowest| Column {
        header,
        drop,
        narrowest,
    };
    let cols = [
        col("id", 0, None),
        col("count", 0, Some(5)),
        col("extra", 1, None),
    ];
    let rows = vec![vec![
        Cell::Text("7".into()),
        Cell::Count(14_932_000),
        Cell::Text("wide text".into()),
    ]];
    // Everything whole: 2 + 8 + 9 + 2 spaces.
    let f = fit_columns(&cols, &rows, 21).unwrap();
    assert_eq!(f.rows, [["7", "14932000", "wide text"]]);
    // One short: the count shortened first, as little as it must be.
    let f = fit_columns(&cols, &rows, 18).unwrap();
    assert_eq!(f.rows, [["7", "14.9M", "wide text"]]);
    assert_eq!(f.widths, [2, 5, 9]);
    // Then the column dropped first goes.
    let f = fit_columns(&cols, &rows, 12).unwrap();
    assert_eq!(
        (f.kept, &f.rows),
        (
            vec![0, 1],
            &vec![vec!["7".to_string(), "14932000".to_string()]]
        )
    );
    assert_eq!(fit_columns(&cols, &rows, 7), None);
    assert_eq!(
        super::fit::cut_words("      0.100600     1  user0 value=123456", 30),
        "      0.100600     1  user0…"
    );
}

/// A snapshot of `n` tasks with large figures, one sender, two CPUs.
fn big_snapshot() -> super::model::Snapshot {
    let mut m = model_of(&schedule());
    m.senders(&ReceiverSummary {
        senders: vec![SenderSummary {
            sender_dropped: 58_660,
            ..sender(54004, 2_847_002_639, 14_932_123)
        }],
        ..ReceiverSummary::default()
    });
    let mut s = m.snapshot();
    s.events = 14_932_123;
    s.tasks[0].activations = 7_460_555;
    s
}

#[test]
fn at_60x15_every_figure_is_whole_or_shortened_and_nothing_is_cut() {
    let snap = big_snapshot();
    for (w, h) in [(60, 15), (80, 24), (200, 50), (60, 12)] {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| view::draw(f, &snap, &status())).unwrap();
        let lines = screen(&t);
        let joined = lines.join("\n");
        let sender = lines
            .iter()
            .find(|l| l.contains("127.0.0.1:54004 #2847002639"))
            .unwrap_or_else(|| panic!("{w}x{h}:\n{joined}"));
        let words: Vec<&str> = sender
            .split(|c: char| c.is_whitespace() || c == '│')
            .filter(|w| !w.is_empty())
            .collect();
        // events, rate, lost: whole or shortened, never cut.
        let events = words[2];
        assert!(
            events == "14932123" || events == "14.9M",
            "{w}x{h}: {sender}"
        );
        assert_eq!(words[3], "-", "{sender}");
        assert!(words[4] == "58660", "{w}x{h}: {sender}");
        let head = &lines[0];
        assert!(
            head.contains("14932123 events") || head.contains("14.9M events"),
            "{w}x{h}: {head}"
        );
        let task = lines
            .iter()
            .find(|l| l.starts_with("│1 "))
            .unwrap_or_else(|| panic!("{w}x{h}:\n{joined}"));
        let act = task.split_whitespace().nth(2).unwrap();
        assert!(act == "7460555" || act == "7.46M", "{w}x{h}: {task}");
        // Below 13 lines the CPUs' box is dropped (after the recent events).
        assert_eq!(
            joined.contains("cpu 0  42.8%"),
            h > 12,
            "{w}x{h}:\n{joined}"
        );
        assert_eq!(joined.contains("┌Recent"), h >= 20, "{w}x{h}:\n{joined}");
    }
}

#[test]
fn below_the_minimum_size_the_view_says_so() {
    let snap = big_snapshot();
    for (w, h) in [(59, 24), (80, 11), (20, 5)] {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| view::draw(f, &snap, &status())).unwrap();
        let lines = screen(&t);
        assert_eq!(
            lines[0].trim_end(),
            if w >= 38 {
                "qtrace live: the terminal is too small"
            } else {
                "qtrace live: the…"
            }
        );
        assert!(
            !lines.join("").contains("14932123"),
            "no figure drawn: {lines:#?}"
        );
        if w >= 30 {
            assert_eq!(lines[1].trim_end(), format!("{w}x{h}; it needs 60x12"));
        }
    }
}

#[test]
fn rejected_datagrams_are_stream_health_in_the_frame() {
    use qtrace::receiver::{RejectedSource, RejectionCounts};
    let summary = |unkeyed, unknown_key| ReceiverSummary {
        rejected: vec![RejectedSource {
            addr: ([127, 0, 0, 1], 4100).into(),
            counts: RejectionCounts {
                unkeyed,
                unknown_key,
                ..RejectionCounts::default()
            },
        }],
        ..ReceiverSummary::default()
    };
    // Without a key: keyed datagrams are "keyed, but this receiver has no key".
    let mut m = model_of(&[]);
    m.senders(&summary(0, 12));
    let text = view::plain(&m.snapshot(), &status());
    assert!(
        text.contains(
            "rejected from 127.0.0.1:4100: 12 keyed, but this receiver has no key (--key-file)\n"
        ),
        "{text}"
    );
    // With one: unkeyed ones and another key's.
    let mut m = model_of(&[]);
    m.keyed = true;
    m.senders(&summary(30, 2));
    let snap = m.snapshot();
    assert!(view::plain(&snap, &status()).contains(
        "rejected from 127.0.0.1:4100: 30 unkeyed (this receiver accepts only keyed datagrams), 2 keyed with a key this receiver does not hold\n"
    ));
    let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
    t.draw(|f| view::draw(f, &snap, &status())).unwrap();
    let joined = screen(&t).join("\n");
    assert!(
        joined.contains(
            "│rejected from 127.0.0.1:4100: 30 unkeyed (this receiver accepts only keyed…"
        ),
        "{joined}"
    );
}

#[test]
fn many_cpus_and_tasks_say_how_many_are_shown() {
    let mut events = Vec::new();
    for cpu in 0..40u32 {
        events.push(ev(
            u64::from(cpu) * 10,
            system::SCHEDULE,
            cpu,
            u64::from(cpu) + 1,
        ));
    }
    events.push(ev(1000, user::USER0, 99, 0));
    let snap = model_of(&events).snapshot();
    assert_eq!((snap.cpus.len(), snap.tasks.len()), (40, 40));
    let mut t = Terminal::new(TestBackend::new(60, 15)).unwrap();
    t.draw(|f| view::draw(f, &snap, &status())).unwrap();
    let lines = screen(&t);
    let joined = lines.join("\n");
    // 60 wide: three CPUs a line (`cpu 10  100.0%` is 14 wide); 15 high:
    // one task row and the senders, then three lines of CPUs.
    assert!(lines[1].starts_with("┌Tasks (1 of 40 shown)"), "{joined}");
    assert!(
        lines[5].starts_with("┌CPU busy (9 of 40 shown)"),
        "{joined}"
    );
    assert_eq!(
        lines[6],
        "│cpu 0  100.0%    cpu 1  99.0%     cpu 2  98.0%            │"
    );
    assert!(joined.contains("cpu 8  92.0%"), "{joined}");
    assert!(!joined.contains("cpu 9  "), "{joined}");
    assert!(lines[14].starts_with("q quit"), "{joined}");
}

#[test]
fn with_recv_live_the_senders_rows_wait_for_the_file() {
    let account = |events: u64, ms: u64| ReceiverSummary {
        elapsed: Duration::from_millis(ms),
        ..ReceiverSummary {
            senders: vec![sender(4000, 1, events)],
            ..ReceiverSummary::default()
        }
    };
    let shown = |m: &Model| m.snapshot().senders.first().map(|r| r.events);
    let mut m = model_of(&[]);
    for (events, ms) in [(100, 100), (200, 200), (300, 300)] {
        m.account(account(events, ms));
    }
    for t in 0..250 {
        m.push(&ev(t, user::USER0, 0, 0));
    }
    // A hoops record and an unclosed-stream mark are not the sender's events.
    m.push(&Event::new(250, tracer::HOOPS, 0, [9, 0]));
    m.settle(true);
    assert_eq!(
        shown(&m),
        Some(200),
        "the newest the file has caught up with"
    );
    for t in 250..300 {
        m.push(&ev(t, user::USER0, 0, 0));
    }
    m.settle(true);
    assert_eq!(shown(&m), Some(300));
    // A file that never catches up: an account a second older than the
    // newest is shown anyway.
    m.account(account(5000, 400));
    m.account(account(6000, 1500));
    m.settle(true);
    assert_eq!(shown(&m), Some(5000));
    // From a receiver of its own (no file): the newest at once.
    m.account(account(7000, 1600));
    m.settle(false);
    assert_eq!(shown(&m), Some(7000));
}

/// A catalog with counters of each kind: `sched:ready` (u64, tasks),
/// `sched:slack` (i64, ns) and `cpu:load` (f64, no unit).
fn counter_catalog() -> (Catalog, [qtrace::EventId; 3]) {
    use qtrace::classes::ClassSpec;
    use qtrace::macros::CounterKind;
    let mut catalog = Catalog::builtin();
    let sched = catalog
        .define(
            ClassSpec::new("sched", "the scheduler")
                .counter("ready", "tasks ready", CounterKind::U64, "tasks")
                .counter("slack", "budget left", CounterKind::I64, "ns"),
        )
        .unwrap();
    let cpu = catalog
        .define(ClassSpec::new("cpu", "the CPUs").counter("load", "load", CounterKind::F64, ""))
        .unwrap();
    let ids = [
        sched.event("ready.counter").unwrap(),
        sched.event("slack.counter").unwrap(),
        cpu.event("load.counter").unwrap(),
    ];
    (catalog, ids)
}

/// Counter records: `ready` on sources 0 (20 values: 0..20 with a dip)
/// and 1, `slack` going negative, `load` as floats; and a schedule.
fn counter_events(ids: [qtrace::EventId; 3]) -> Vec<Event> {
    let [ready, slack, load] = ids;
    let mut events = vec![ev(0, system::SCHEDULE, 0, 1)];
    for i in 0..20u64 {
        let v = if i == 10 { 2 } else { i };
        events.push(Event::new(10 + i, ready, 0, [v, 0]));
    }
    events.push(Event::new(40, ready, 1, [7, 0]));
    for (i, v) in [500i64, -250, 125].into_iter().enumerate() {
        events.push(Event::new(50 + i as u64, slack, 1, [v as u64, 0]));
    }
    for (i, v) in [0.5f64, 1.25, 0.0].into_iter().enumerate() {
        events.push(Event::new(60 + i as u64, load, 0, [v.to_bits(), 0]));
    }
    events
}

#[test]
fn counters_keep_their_last_values_per_source() {
    use super::model::{CounterRow, SPARK};
    use qtrace::macros::CounterKind;
    let (catalog, ids) = counter_catalog();
    let mut m = Model::new(catalog, S, 1_000_000);
    for e in counter_events(ids) {
        m.push(&e);
    }
    let s = m.snapshot();
    let row = |name: &str, unit: &str, kind, source, values: Vec<u64>| CounterRow {
        name: name.into(),
        unit: unit.into(),
        kind,
        source,
        queue: None,
        values,
    };
    // Source 0's `ready` logged 20 values: the last 16 are kept.
    assert_eq!(SPARK, 16);
    let mut ready0: Vec<u64> = (4..20).collect();
    ready0[6] = 2;
    assert_eq!(
        s.counters,
        [
            row("sched:ready", "tasks", CounterKind::U64, 0, ready0),
            row("sched:ready", "tasks", CounterKind::U64, 1, vec![7]),
            row(
                "sched:slack",
                "ns",
                CounterKind::I64,
                1,
                vec![500, -250i64 as u64, 125]
            ),
            row(
                "cpu:load",
                "",
                CounterKind::F64,
                0,
                vec![0.5f64.to_bits(), 1.25f64.to_bits(), 0]
            ),
        ]
    );
    // Without counters in the catalog, none.
    assert!(model_of(&schedule()).snapshot().counters.is_empty());
}

#[test]
fn counters_are_drawn_with_value_sparkline_and_range() {
    let (catalog, ids) = counter_catalog();
    let mut m = Model::new(catalog, S, 1_000_000);
    for e in counter_events(ids) {
        m.push(&e);
    }
    let snap = m.snapshot();
    let text = view::plain(&snap, &status());
    let counters: Vec<&str> = text.lines().filter(|l| l.starts_with("counter ")).collect();
    // Source 0's `ready`: 4..=19 with a dip to 2, scaled from 2 (▁) to 19.
    assert_eq!(
        counters,
        [
            "counter sched:ready  source 0  value 19 tasks  recent ▂▂▃▃▃▄▁▅▅▆▆▆▇▇██  min 2 max 19",
            "counter sched:ready  source 1  value 7 tasks  recent ▁  min 7 max 7",
            "counter sched:slack  source 1  value 125 ns  recent █▁▅  min -250 max 500",
            "counter cpu:load  source 0  value 0  recent ▄█▁  min 0 max 1.25",
        ]
    );
    let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
    t.draw(|f| view::draw(f, &snap, &status())).unwrap();
    let lines = screen(&t);
    let at = lines
        .iter()
        .position(|l| l.starts_with("┌Counters"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert_eq!(
        lines[at..at + 7],
        [
            "┌Counters──────────────────────────────────────────────────────────────────────┐",
            "│counter       src   value   unit    recent             min    max             │",
            "│sched:ready   0     19      tasks   ▂▂▃▃▃▄▁▅▅▆▆▆▇▇██   2      19              │",
            "│sched:ready   1     7       tasks   ▁                  7      7               │",
            "│sched:slack   1     125     ns      █▁▅                -250   500             │",
            "│cpu:load      0     0               ▄█▁                0      1.25            │",
            "└──────────────────────────────────────────────────────────────────────────────┘",
        ]
    );
    // Short: the rows that fit, said so; the columns closed up.
    let mut t = Terminal::new(TestBackend::new(60, 18)).unwrap();
    t.draw(|f| view::draw(f, &snap, &status())).unwrap();
    let lines = screen(&t);
    assert_eq!(
        lines[12..17],
        [
            "┌Counters (2 of 4 shown)───────────────────────────────────┐",
            "│counter      src  value  unit   recent            min  max│",
            "│sched:ready  0    19     tasks  ▂▂▃▃▃▄▁▅▅▆▆▆▇▇██  2    19 │",
            "│sched:ready  1    7      tasks  ▁                 7    7  │",
            "└──────────────────────────────────────────────────────────┘",
        ],
        "{lines:#?}"
    );
    // Below four spare lines the box is not drawn.
    let mut t = Terminal::new(TestBackend::new(60, 16)).unwrap();
    t.draw(|f| view::draw(f, &snap, &status())).unwrap();
    assert!(!screen(&t).join("\n").contains("Counters"));
}

#[test]
fn counter_values_and_sparklines_of_odd_values() {
    use qtrace::macros::CounterKind;
    use view::{counter_value, sparkline};
    let f = |v: f64| v.to_bits();
    assert_eq!(counter_value(CounterKind::F64, f(0.1 + 0.2)), "0.3");
    assert_eq!(counter_value(CounterKind::F64, f(-0.0001)), "0");
    assert_eq!(counter_value(CounterKind::F64, f(-2.5)), "-2.5");
    assert_eq!(counter_value(CounterKind::F64, f(f64::NAN)), "NaN");
    assert_eq!(counter_value(CounterKind::F64, f(f64::INFINITY)), "inf");
    assert_eq!(counter_value(CounterKind::I64, -7i64 as u64), "-7");
    assert_eq!(
        counter_value(CounterKind::U64, u64::MAX),
        "18446744073709551615"
    );
    // Flat: all lowest; NaN: a space, the rest scaled without it.
    assert_eq!(sparkline(CounterKind::U64, &[5, 5, 5]), "▁▁▁");
    assert_eq!(
        sparkline(CounterKind::F64, &[f(1.0), f(f64::NAN), f(8.0), f(4.5)]),
        "▁ █▅"
    );
    // Signed: -1 is below 0.
    assert_eq!(sparkline(CounterKind::I64, &[0, -1i64 as u64, 1]), "▅▁█");
    assert_eq!(sparkline(CounterKind::U64, &[]), "");
}

/// The queue counters (FORMAT.md 1.3.4) of two queues, both from the
/// tracer's source: a row per queue (`arg1`), named for it; another
/// class's counter ignores `arg1`.
#[test]
fn counters_of_two_queues_are_two_rows() {
    use super::model::CounterRow;
    use qtrace::classes::ClassSpec;
    use qtrace::macros::CounterKind;
    let mut catalog = Catalog::builtin();
    let q = catalog
        .define(
            ClassSpec::new("qtrace", "the tracer's own counters").counter(
                "queue.fill",
                "fill",
                CounterKind::U64,
                "events",
            ),
        )
        .unwrap();
    let sched = catalog
        .define(ClassSpec::new("sched", "the scheduler").counter(
            "ready",
            "ready",
            CounterKind::U64,
            "tasks",
        ))
        .unwrap();
    let fill = q.event("queue.fill.counter").unwrap();
    let ready = sched.event("ready.counter").unwrap();
    let mut m = Model::new(catalog, S, 1_000_000);
    for (t, v, queue) in [(10, 16, 0), (11, 5, 2), (20, 0, 0), (21, 3, 2)] {
        m.push(&Event::new(t, fill, u32::MAX, [v, queue]));
    }
    m.push(&Event::new(30, ready, 0, [4, 1]));
    m.push(&Event::new(31, ready, 0, [6, 9]));
    let row = |name: &str, unit: &str, source, queue, values: Vec<u64>| CounterRow {
        name: name.into(),
        unit: unit.into(),
        kind: CounterKind::U64,
        source,
        queue,
        values,
    };
    assert_eq!(
        m.snapshot().counters,
        [
            row(
                "qtrace:queue.fill (queue 0)",
                "events",
                u32::MAX,
                Some(0),
                vec![16, 0]
            ),
            row(
                "qtrace:queue.fill (queue 2)",
                "events",
                u32::MAX,
                Some(2),
                vec![5, 3]
            ),
            row("sched:ready", "tasks", 0, None, vec![4, 6]),
        ]
    );
}

/// The input ended (the receiver stopped) with a stream not closed: its
/// row says `unclosed` at once, not `open` (nothing more can come), at this
/// and every later account; a closed one stays `closed`. The receiver's
/// unclosed-stream mark in the window is not counted an event.
#[test]
fn when_the_input_ends_a_stream_without_its_close_is_unclosed() {
    let mut m = model_of(&[]);
    let at = |ms: u64| ReceiverSummary {
        elapsed: Duration::from_millis(ms),
        senders: vec![
            sender(4000, 1, 30),
            SenderSummary {
                closed: true,
                ..sender(4001, 2, 20)
            },
        ],
        ..ReceiverSummary::default()
    };
    for t in 0..30 {
        m.push(&ev(t, user::USER0, 0, 0));
    }
    m.senders(&at(100));
    let health =
        |m: &Model| -> Vec<Health> { m.snapshot().senders.iter().map(|r| r.health).collect() };
    assert_eq!(health(&m), [Health::Open, Health::Closed]);
    assert_eq!(m.snapshot().events, 30);
    m.push(&qtrace::wire::unclosed_mark(30, 1, 30));
    assert_eq!(m.snapshot().events, 30, "the mark is not an event");
    m.input_ended();
    assert_eq!(health(&m), [Health::Unclosed, Health::Closed]);
    // Well within SILENT of its last growth: still unclosed.
    m.senders(&at(200));
    assert_eq!(health(&m), [Health::Unclosed, Health::Closed]);
    assert_eq!(m.snapshot().senders[0].events, 30);
}
