//! The receiver (S.Ha.R.K.'s `udpdump`): takes the UDP queue's datagrams from
//! any number of senders and writes them to a trace file.

pub mod sequence;
