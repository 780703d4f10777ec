package sqlite

// WALLimit is the log size past which the writer truncates the log.
const WALLimit = walLimit
