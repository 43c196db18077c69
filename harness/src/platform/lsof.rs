//! Reading `lsof -F` output (its field format, lsof(8) "OUTPUT FOR OTHER PROGRAMS"): one field
//! a line, the first character naming it: `p` a process id, starting a process set, `c` its
//! command name. Pure, so that it is tested on every OS.

/// Each process set's (pid, command), in the order listed.
pub fn listeners(output: &str) -> Vec<(u32, String)> {
    let mut found: Vec<(u32, String)> = Vec::new();
    for line in output.lines() {
        match line.split_at_checked(1) {
            Some(("p", pid)) => {
                if let Ok(pid) = pid.parse() {
                    found.push((pid, String::new()));
                }
            }
            Some(("c", command)) => {
                if let Some(last) = found.last_mut() {
                    last.1 = command.to_owned();
                }
            }
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    #[test]
    fn process_sets_are_read_with_their_command() {
        // `lsof -nP -iTCP:8080 -sTCP:LISTEN -Fpc` prints, per process, `p` then `c`, then an
        // `f` line per file (the listening socket's descriptor); constructed from lsof(8)'s
        // field format, since -F output is what lsof prints on every platform it runs on.
        let output = "p4242\ncllama-server\nf3\np977\ncPython\nf7\nf8\n";
        assert_eq!(super::listeners(output), [(4242, "llama-server".to_owned()), (977, "Python".to_owned())]);
        assert!(super::listeners("").is_empty());
        assert!(super::listeners("pnot-a-pid\ncx\n").is_empty());
    }
}
