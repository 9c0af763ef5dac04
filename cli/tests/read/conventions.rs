//! The command's conventions: `qtrace --help` on one 80x24 screen with
//! summaries of at most 60 characters, `-h` short and `--help` long, shell
//! completions (bash loads its script), the man page.

use std::process::Command;

fn qtrace(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        .output()
        .expect("run qtrace");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const SUBCOMMANDS: [&str; 14] = [
    "events",
    "dump",
    "stats",
    "recv",
    "keygen",
    "recover",
    "convert",
    "analyze",
    "plot",
    "live",
    "ctl",
    "sql",
    "completions",
    "man",
];

#[test]
fn help_fits_one_screen_with_short_summaries() {
    let (code, help, _) = qtrace(&["--help"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = help.lines().collect();
    assert!(lines.len() <= 24, "{} lines:\n{help}", lines.len());
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{help}");
    let start = lines.iter().position(|l| *l == "Commands:").unwrap() + 1;
    let mut seen = Vec::new();
    for line in &lines[start..] {
        if line.is_empty() {
            break;
        }
        let (name, summary) = line.trim_start().split_once(' ').unwrap();
        let summary = summary.trim_start();
        assert!(
            summary.chars().count() <= 60,
            "{name}: {} characters: {summary:?}",
            summary.chars().count()
        );
        assert!(!summary.is_empty(), "{name}");
        seen.push(name);
    }
    let mut expected = SUBCOMMANDS.to_vec();
    expected.push("help");
    assert_eq!(seen, expected);
}

#[test]
fn dash_h_is_short_and_dash_dash_help_long() {
    for cmd in SUBCOMMANDS {
        let (c1, short, _) = qtrace(&[cmd, "-h"]);
        let (c2, long, _) = qtrace(&[cmd, "--help"]);
        assert_eq!((c1, c2), (0, 0), "{cmd}");
        assert!(short.len() < long.len() || cmd == "events", "{cmd}");
        // -h: the summary first, then usage; each flag on one line.
        let first = short.lines().next().unwrap();
        assert!(first.chars().count() <= 60, "{cmd}: {first:?}");
    }
    // The long text of a subcommand is in its --help, not in qtrace --help.
    let (_, dump, _) = qtrace(&["dump", "--help"]);
    assert!(dump.contains("Exit status (FORMAT.md"), "{dump}");
    let (_, top, _) = qtrace(&["--help"]);
    assert!(!top.contains("Exit status"));
}

#[test]
fn completions_for_bash_zsh_and_fish_and_bash_loads_its_own() {
    for (shell, needle) in [
        ("bash", "complete -F _qtrace"),
        ("zsh", "#compdef qtrace"),
        ("fish", "complete -c qtrace"),
    ] {
        let (code, script, err) = qtrace(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(script.contains(needle), "{shell}:\n{script}");
        for cmd in SUBCOMMANDS {
            assert!(script.contains(cmd), "{shell} misses {cmd}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("qtrace.bash");
    let (_, script, _) = qtrace(&["completions", "bash"]);
    std::fs::write(&file, script).unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("source '{}'; complete -p qtrace", file.display()))
        .output()
        .expect("bash");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        said,
        "complete -o bashdefault -o default -o nosort -F _qtrace qtrace\n"
    );

    let (code, _, err) = qtrace(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
}

#[test]
fn the_man_page_is_roff_with_every_subcommand() {
    let (code, page, _) = qtrace(&["man"]);
    assert_eq!(code, 0);
    let th = page
        .lines()
        .find(|l| l.starts_with('.') && !l.starts_with(".ie") && !l.starts_with(".el"));
    assert_eq!(th.map(|l| &l[..12]), Some(".TH qtrace 1"), "{page}");
    assert!(page.contains(".SH NAME"));
    assert!(page.contains(".SH SUBCOMMANDS"), "{page}");
    for cmd in SUBCOMMANDS {
        assert!(
            page.contains(&format!("qtrace\\-{cmd}(1)")),
            "{cmd}:\n{page}"
        );
    }
}
