//! The one source of truth for errors: a DAT error is a return type and a subtype, rendered into
//! a `DAT_RETURN` as `dat_error.h`'s `DAT_ERROR(type, subtype)` does.

use crate::abi::*;

pub type Type = dat_return_type;
pub type Sub = dat_return_subtype;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DatError {
    pub kind: Type,
    pub sub: Sub,
    /// Returned as the bare type, without the error class (`DatError::unclassed`).
    unclassed: bool,
}

pub type DatResult<T = ()> = Result<T, DatError>;

impl DatError {
    pub const fn new(kind: Type, sub: Sub) -> Self {
        DatError {
            kind,
            sub,
            unclassed: false,
        }
    }

    /// The bare type as a `DAT_RETURN`, without the error class: `DAT_CONN_QUAL_IN_USE` where
    /// a port is taken, as OpenFabrics' providers return it (its common code adds the class
    /// only where the IA's own PSP listens on the very qualifier).
    pub const fn unclassed(kind: Type) -> Self {
        DatError {
            kind,
            sub: Sub::DAT_NO_SUBTYPE,
            unclassed: true,
        }
    }

    /// `DAT_ERROR(type, subtype)`: every DAT error carries the error class, except the two
    /// statuses of waiting for events, returned as the bare values the man pages name: programs
    /// poll with `while (dat_evd_dequeue(..) == DAT_QUEUE_EMPTY)` (dtest does) and test
    /// `dat_evd_wait(..) == DAT_TIMEOUT_EXPIRED`, and OpenFabrics returns both so.
    pub fn code(self) -> DAT_RETURN {
        if self.unclassed || matches!(self.kind, Type::DAT_QUEUE_EMPTY | Type::DAT_TIMEOUT_EXPIRED)
        {
            return u32::from(self.kind);
        }
        DAT_CLASS_ERROR | u32::from(self.kind) | u32::from(self.sub)
    }

    pub const fn invalid_handle(sub: Sub) -> Self {
        Self::new(Type::DAT_INVALID_HANDLE, sub)
    }

    /// `DAT_INVALID_PARAMETER` naming the 1-based position of the argument.
    pub fn invalid_arg(position: u8) -> Self {
        Self::new(Type::DAT_INVALID_PARAMETER, arg_subtype(position))
    }

    pub const fn invalid_state(sub: Sub) -> Self {
        Self::new(Type::DAT_INVALID_STATE, sub)
    }

    pub const fn bare(kind: Type) -> Self {
        Self::new(kind, Sub::DAT_NO_SUBTYPE)
    }

    pub const fn resources(sub: Sub) -> Self {
        Self::new(Type::DAT_INSUFFICIENT_RESOURCES, sub)
    }

    pub const fn not_implemented() -> Self {
        Self::bare(Type::DAT_NOT_IMPLEMENTED)
    }

    pub const fn internal() -> Self {
        Self::bare(Type::DAT_INTERNAL_ERROR)
    }
}

/// `DAT_INVALID_ARG1` .. `DAT_INVALID_ARG10`.
pub fn arg_subtype(position: u8) -> Sub {
    let base = u32::from(Sub::DAT_INVALID_ARG1);
    let position = u32::from(position.clamp(1, 10));
    Sub::try_from(base + position - 1).unwrap_or(Sub::DAT_NO_SUBTYPE)
}

/// The final `DAT_RETURN` of an exported function.
pub fn to_return(result: DatResult) -> DAT_RETURN {
    match result {
        Ok(()) => u32::from(Type::DAT_SUCCESS),
        Err(e) => e.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_dat_error_macro() {
        let e = DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP);
        assert_eq!(
            e.code(),
            0x8000_0000 | 0x0005_0000 | Sub::DAT_INVALID_HANDLE_EP as u32
        );
        assert_eq!(to_return(Ok(())), 0);
    }

    #[test]
    fn argument_positions_map_to_subtypes() {
        assert_eq!(arg_subtype(1), Sub::DAT_INVALID_ARG1);
        assert_eq!(arg_subtype(4), Sub::DAT_INVALID_ARG4);
        assert_eq!(arg_subtype(10), Sub::DAT_INVALID_ARG10);
    }
}
