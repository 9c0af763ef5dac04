//! Errors are split by layer and composed with `From` into `qtrace::Error`:
//! `?` works across layers, each layer error keeps its text, I/O failures
//! are `Error::Io` whichever layer they came from, and each error holds its
//! cause once: the cause's text is in the message, so no `source()` chain
//! repeats it (the cause itself is a field). The converters' part needs the
//! feature `export`.

use std::error::Error as StdError;

use qtrace::classes::{Catalog, CatalogError, ClassSpec};
use qtrace::clock::{Clock, ClockKind, ClockUnavailable};
#[cfg(feature = "export")]
use qtrace::export::ExportError;
#[cfg(feature = "export")]
use qtrace::export::{chrome::ChromeWriter, EventSink};
use qtrace::queues::{Dummy, Fixed, FixedParams};
use qtrace::reader::{ReadError, TraceReader};
use qtrace::storage::{recover_file, RecoverError, RingFileError, RingImage};
use qtrace::wire::WireError;
use qtrace::IoError;
use qtrace::{Config, ConfigError, Error, Tracer};

/// Every error type is a `std::error::Error` that crosses threads.
#[test]
fn every_error_is_a_std_error_send_sync() {
    fn check<E: StdError + Send + Sync + 'static>() {}
    check::<Error>();
    check::<ConfigError>();
    check::<CatalogError>();
    #[cfg(feature = "export")]
    check::<ExportError>();
    check::<WireError>();
    check::<IoError>();
    check::<ReadError>();
    check::<RecoverError>();
    check::<RingFileError>();
    check::<ClockUnavailable>();
}

#[test]
fn a_config_error_becomes_error_config_with_the_same_text() {
    fn create_late(tracer: &Tracer) -> Result<(), Error> {
        tracer.create_queue::<Dummy>(())?;
        Ok(())
    }
    let tracer = Tracer::new();
    tracer.activate().unwrap();
    let direct = tracer.create_queue::<Dummy>(()).unwrap_err();
    let composed = create_late(&tracer).unwrap_err();
    assert_eq!(composed.to_string(), direct.to_string());
    assert_eq!(
        composed.to_string(),
        "cannot create a queue after phase 2: do it in phase 1, before Tracer::activate"
    );
    assert!(matches!(
        composed,
        Error::Config(ConfigError::AfterPhase2 {
            operation: "create a queue"
        })
    ));
    // Transparent wrapping: no cause below a phase error.
    assert!(composed.source().is_none());
}

#[test]
fn a_bad_class_is_a_catalog_error_at_both_levels() {
    let tracer = Tracer::new();
    let spec = || ClassSpec::new("no spaces", "bad name").event("e", "", &[]);
    let direct = tracer.define_class(spec()).unwrap_err();
    assert!(matches!(
        &direct,
        ConfigError::Catalog(CatalogError::InvalidName { what: "class", name }) if name == "no spaces"
    ));
    let composed: Error = tracer.define_class(spec()).unwrap_err().into();
    match &composed {
        Error::Catalog(CatalogError::InvalidName { what, name }) => {
            assert_eq!((*what, name.as_str()), ("class", "no spaces"));
        }
        other => panic!("{other:?}"),
    }
    let text = "class name \"no spaces\" is invalid: use 1 to 64 characters from A-Z a-z 0-9 _ . -";
    assert_eq!(direct.to_string(), text);
    assert_eq!(composed.to_string(), text);
    // The catalog's own builder returns the model's error directly.
    let mut catalog = Catalog::builtin();
    assert_eq!(
        catalog.define(spec()).unwrap_err(),
        CatalogError::InvalidName {
            what: "class",
            name: "no spaces".to_string()
        }
    );
}

#[test]
fn a_queue_io_failure_is_error_io_with_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"x").unwrap();
    let tracer = Tracer::with_config(Config::default().with_output_dir(blocker.join("out")));
    let direct = tracer
        .create_queue::<Fixed>(FixedParams::default())
        .unwrap_err();
    assert!(matches!(direct, ConfigError::Io(_)), "{direct:?}");
    let text = direct.to_string();
    let composed: Error = direct.into();
    match &composed {
        Error::Io(e) => assert!(e.path.as_ref().unwrap().starts_with(&blocker)),
        other => panic!("{other:?}"),
    }
    assert_eq!(composed.to_string(), text);
    // The OS error's text ends the message; it is not said twice.
    assert!(composed.source().is_none());
    match &composed {
        Error::Io(e) => assert!(text.ends_with(&e.source.to_string()), "{text}"),
        other => panic!("{other:?}"),
    }
}

#[cfg(feature = "export")]
#[test]
fn export_errors_compose_and_io_flattens() {
    let mut out = Vec::new();
    let mut writer = ChromeWriter::new(&Catalog::builtin(), 0, &mut out).unwrap();
    writer.finish().unwrap();
    let event = qtrace::Event::new(1, qtrace::classes::user::USER0, 0, [0, 0]);
    let finished: Error = writer.push(&event).unwrap_err().into();
    assert!(matches!(
        finished,
        Error::Export(ExportError::ConverterFinished)
    ));
    assert_eq!(
        finished.to_string(),
        "this converter has already been finished: create a new writer for another trace"
    );

    let io = ExportError::io("write", "/x/y.json", std::io::Error::other("disk full"));
    let io: Error = io.into();
    assert!(matches!(
        io,
        Error::Io(IoError {
            action: "write",
            ..
        })
    ));
    assert_eq!(io.to_string(), "cannot write /x/y.json: disk full");
}

/// A crate-level error that passes through a converter (a `SplitByTime`
/// sink factory using `?`) comes back out as itself.
#[cfg(feature = "export")]
#[test]
fn a_crate_error_through_a_converter_comes_back_whole() {
    let inner = Error::from(ConfigError::Phase2Twice);
    let through: ExportError = inner.into();
    assert!(matches!(through, ExportError::Caller(_)));
    assert_eq!(
        through.to_string(),
        "phase 2 has already run: queues are activated once; call it once per tracer"
    );
    let back: Error = through.into();
    assert!(matches!(back, Error::Config(ConfigError::Phase2Twice)));
}

#[test]
fn wire_and_clock_errors_compose() {
    let wire = qtrace::wire::TraceHeader::decode(b"not a trace").unwrap_err();
    let text = wire.to_string();
    let composed: Error = wire.into();
    assert!(matches!(composed, Error::Wire(_)));
    assert_eq!(composed.to_string(), text);

    fn manual() -> Result<Clock, Error> {
        Ok(Clock::of_kind(ClockKind::Manual)?)
    }
    match manual().unwrap_err() {
        Error::Config(ConfigError::ClockUnavailable(ClockUnavailable { kind, .. })) => {
            assert_eq!(kind, "manual")
        }
        other => panic!("{other:?}"),
    }
    let e = Config::default()
        .with_clock_kind(ClockKind::Manual)
        .unwrap_err();
    assert!(e
        .to_string()
        .starts_with("a `manual` clock is not available: "));
}

#[test]
fn the_receivers_io_error_composes() {
    let e = IoError::without_path("receive datagrams", std::io::Error::other("gone"));
    assert_eq!(e.to_string(), "cannot receive datagrams: gone");
    let composed: Error = e.into();
    assert!(matches!(composed, Error::Io(IoError { path: None, .. })));
    assert_eq!(composed.to_string(), "cannot receive datagrams: gone");
}

/// The source chain of `e`, outermost first, as `Display` texts.
fn chain(e: &(dyn StdError + 'static)) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut next = e.source();
    while let Some(s) = next {
        out.push(s.to_string());
        next = s.source();
    }
    out
}

#[test]
fn a_read_error_composes_with_question_mark() {
    fn open(path: &std::path::Path) -> Result<TraceReader, Error> {
        Ok(TraceReader::open(path)?) // ReadError -> Error
    }
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.qtr");
    let direct = TraceReader::open(&missing).unwrap_err();
    let text = direct.to_string();
    let composed = open(&missing).unwrap_err();
    assert!(
        matches!(composed, Error::Read(ReadError::Open { .. })),
        "{composed:?}"
    );
    assert_eq!(composed.to_string(), text);
    // The OS error is in the text and in the field, not in a chain.
    let links = chain(&composed);
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0], text);
    match &composed {
        Error::Read(ReadError::Open { source, .. }) => {
            assert!(text.ends_with(&source.to_string()), "{text}")
        }
        other => panic!("{other:?}"),
    }

    // Bytes that are not a trace: the wire error's text, held once.
    fn parse(bytes: &[u8]) -> Result<(), Error> {
        TraceReader::new(bytes)?;
        Ok(())
    }
    let bad = parse(b"not a trace at all, not even close to one").unwrap_err();
    assert!(
        matches!(bad, Error::Read(ReadError::Format { .. })),
        "{bad:?}"
    );
    assert!(bad.source().is_none());
    match &bad {
        Error::Read(ReadError::Format { error, .. }) => {
            assert_eq!(bad.to_string(), error.to_string());
            let _: &WireError = error;
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn ring_file_and_recover_errors_compose_with_question_mark() {
    fn parse(bytes: &[u8]) -> Result<(), Error> {
        RingImage::parse(bytes)?; // RingFileError -> Error
        Ok(())
    }
    let e = parse(b"definitely not a ring file").unwrap_err();
    let direct = RingImage::parse(b"definitely not a ring file").unwrap_err();
    assert_eq!(e.to_string(), direct.to_string());
    assert!(
        matches!(
            e,
            Error::Recover(RecoverError::Format(RingFileError::NotARingFile))
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("pass the .ring file"));

    fn recover(path: &std::path::Path) -> Result<usize, Error> {
        Ok(recover_file(path)?.events.len()) // RecoverError -> Error
    }
    let dir = tempfile::tempdir().unwrap();
    let missing = recover(&dir.path().join("gone.ring")).unwrap_err();
    assert!(
        matches!(missing, Error::Recover(RecoverError::Io(_))),
        "{missing:?}"
    );
    assert!(missing
        .to_string()
        .starts_with("cannot read the ring file: "));
    assert!(
        missing.source().is_none(),
        "the OS error's text is in the message"
    );

    let not_ring = dir.path().join("x.ring");
    std::fs::write(&not_ring, b"plain text").unwrap();
    let e = recover(&not_ring).unwrap_err();
    assert!(
        matches!(e, Error::Recover(RecoverError::Format(_))),
        "{e:?}"
    );
    // Transparent wrapping: the ring file error's text, held once.
    assert!(e.source().is_none());
}

#[test]
fn io_errors_are_held_whole_at_every_layer() {
    let io = IoError::new(
        "create trace file",
        "/no/such/q0.qtr",
        std::io::ErrorKind::NotFound.into(),
    );
    let text = io.to_string();
    let config: ConfigError = io.into();
    assert!(matches!(&config, ConfigError::Io(e) if e.action == "create trace file"));
    assert_eq!(config.to_string(), text);
    let top: Error = config.into();
    match &top {
        Error::Io(e) => assert_eq!(
            e.path.as_deref(),
            Some(std::path::Path::new("/no/such/q0.qtr"))
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(top.to_string(), text);
    assert!(
        top.source().is_none(),
        "the OS error's text is in the message"
    );
    #[cfg(feature = "export")]
    {
        let back: ExportError = top.into();
        assert!(matches!(&back, ExportError::Io(_)));
        assert_eq!(back.to_string(), text);
        assert!(back.source().is_none());
    }
}
