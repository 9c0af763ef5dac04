//! qtrace's benchmarks: cost per event against the floor and the Rust peers
//! (`overhead`, `paired`), scaling with threads (`threads`), streaming
//! throughput (`streams`). The benches are this crate's targets
//! (`cargo bench` from the repository root); this library is empty.
//! `BENCHMARKS.md` has the method and the figures.
