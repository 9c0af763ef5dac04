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
        events: 10, // records: 9 events and the hoops record
        rate: 20,   // 10 in 0.5 s
        lost: 4,
        health: Health::Open,
    };
    assert_eq!(s.senders, [row]);
    m.file_tick("a.qtr", Duration::from_millis(1500), true);
    let s = m.snapshot();
    assert_eq!(s.senders[0].health, Health::Closed);
    assert_eq!(s.senders[0].rate, 0); // nothing in the last second
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
    let at = |events: [u64; 3]| ReceiverSummary {
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
    m.senders(&at([100, 50, 7]), Duration::ZERO);
    m.senders(&at([300, 50, 7]), S);
    m.senders(&at([500, 50, 7]), 2 * S);
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
            row("127.0.0.1:4000 #1", 500, 200, 5, Health::Open),
            row("127.0.0.1:4001 #2", 50, 0, 0, Health::Closed),
            // Silent for 2 s without a close.
            row("127.0.0.1:4002 #3", 7, 0, 0, Health::Unclosed),
            row("127.0.0.1:4003 #9", 0, 0, 60, Health::Rejected),
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
    m.senders(
        &ReceiverSummary {
            senders: vec![SenderSummary {
                sender_dropped: 5,
                ..sender(4000, 1, 11)
            }],
            ..ReceiverSummary::default()
        },
        Duration::ZERO,
    );
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
        ["│task", "cpu", "act", "resp", "p50", "p99", "max", "preempt", "blocked", "│"]
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
    assert!(joined.contains("│cpu 0   42.8%"), "{joined}");
    assert!(joined.contains("│cpu 1   28.5%"), "{joined}");
    let sender_line = lines
        .iter()
        .position(|l| l.contains("127.0.0.1:4000 #1"))
        .expect("the sender row");
    let words: Vec<&str> = lines[sender_line].split_whitespace().collect();
    assert!(
        words
            .windows(5)
            .any(|w| w == ["#1", "11", "0/s", "5", "open"]),
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
