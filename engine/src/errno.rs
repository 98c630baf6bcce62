//! Error names as `errno.h` spells them, for the keys that take a list of errors.

/// The error number of `name` (`"ENOSPC"`), among the errors an I/O can meet.
pub fn by_name(name: &str) -> Option<i32> {
    NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, v)| v)
}

/// The name of error number `n`, when it is one of these.
pub fn name_of(n: i32) -> Option<&'static str> {
    NAMES.iter().find(|&&(_, v)| v == n).map(|&(name, _)| name)
}

const NAMES: &[(&str, i32)] = &[
    ("EPERM", libc::EPERM),
    ("ENOENT", libc::ENOENT),
    ("EINTR", libc::EINTR),
    ("EIO", libc::EIO),
    ("ENXIO", libc::ENXIO),
    ("EBADF", libc::EBADF),
    ("EAGAIN", libc::EAGAIN),
    ("ENOMEM", libc::ENOMEM),
    ("EACCES", libc::EACCES),
    ("EFAULT", libc::EFAULT),
    ("EBUSY", libc::EBUSY),
    ("EEXIST", libc::EEXIST),
    ("ENODEV", libc::ENODEV),
    ("EISDIR", libc::EISDIR),
    ("EINVAL", libc::EINVAL),
    ("EFBIG", libc::EFBIG),
    ("ENOSPC", libc::ENOSPC),
    ("ESPIPE", libc::ESPIPE),
    ("EROFS", libc::EROFS),
    ("ERANGE", libc::ERANGE),
    ("ENODATA", libc::ENODATA),
    ("ETIME", libc::ETIME),
    ("EBADMSG", libc::EBADMSG),
    ("EOVERFLOW", libc::EOVERFLOW),
    ("EILSEQ", libc::EILSEQ),
    ("EOPNOTSUPP", libc::EOPNOTSUPP),
    ("ETIMEDOUT", libc::ETIMEDOUT),
    ("ESTALE", libc::ESTALE),
    ("EDQUOT", libc::EDQUOT),
    ("ECANCELED", libc::ECANCELED),
    ("ENOTSUP", libc::ENOTSUP),
    ("EUCLEAN", libc::EUCLEAN),
    ("EREMOTEIO", libc::EREMOTEIO),
    ("ENOMEDIUM", libc::ENOMEDIUM),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_agree() {
        assert_eq!(by_name("enospc"), Some(libc::ENOSPC));
        assert_eq!(name_of(libc::EIO), Some("EIO"));
        assert_eq!(by_name("ENOTANERROR"), None);
    }
}
