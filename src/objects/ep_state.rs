//! The EP state machine of the man pages, with no I/O: which operation is legal in which state,
//! where it leads, and the `DAT_INVALID_STATE` subtype an illegal call gets.

use crate::abi::dat_ep_state as S;
use crate::error::{DatError, DatResult, Sub};

pub type State = S;

/// The `DAT_INVALID_STATE_EP_*` subtype naming the state an EP is in.
pub fn subtype(state: State) -> Sub {
    match state {
        S::DAT_EP_STATE_UNCONNECTED => Sub::DAT_INVALID_STATE_EP_UNCONNECTED,
        S::DAT_EP_STATE_UNCONFIGURED_UNCONNECTED => Sub::DAT_INVALID_STATE_EP_UNCONFIGURED,
        S::DAT_EP_STATE_RESERVED => Sub::DAT_INVALID_STATE_EP_RESERVED,
        S::DAT_EP_STATE_UNCONFIGURED_RESERVED => Sub::DAT_INVALID_STATE_EP_UNCONFRESERVED,
        S::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING => Sub::DAT_INVALID_STATE_EP_PASSCONNPENDING,
        S::DAT_EP_STATE_UNCONFIGURED_PASSIVE => Sub::DAT_INVALID_STATE_EP_UNCONFPASSIVE,
        S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING => Sub::DAT_INVALID_STATE_EP_ACTCONNPENDING,
        S::DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING => Sub::DAT_INVALID_STATE_EP_TENTCONNPENDING,
        S::DAT_EP_STATE_UNCONFIGURED_TENTATIVE => Sub::DAT_INVALID_STATE_EP_UNCONFTENTATIVE,
        S::DAT_EP_STATE_CONNECTED
        | S::DAT_EP_STATE_CONNECTED_SINGLE_PATH
        | S::DAT_EP_STATE_CONNECTED_MULTI_PATH => Sub::DAT_INVALID_STATE_EP_CONNECTED,
        S::DAT_EP_STATE_DISCONNECT_PENDING => Sub::DAT_INVALID_STATE_EP_DISCPENDING,
        S::DAT_EP_STATE_DISCONNECTED => Sub::DAT_INVALID_STATE_EP_DISCONNECTED,
        S::DAT_EP_STATE_COMPLETION_PENDING => Sub::DAT_INVALID_STATE_EP_COMPLPENDING,
    }
}

fn refuse(state: State) -> DatError {
    DatError::invalid_state(subtype(state))
}

/// `dat_ep_connect` / `dat_ep_dup_connect`: only an UNCONNECTED EP connects; it becomes
/// ACTIVE_CONNECTION_PENDING.
pub fn connect(state: State) -> DatResult<State> {
    match state {
        S::DAT_EP_STATE_UNCONNECTED => Ok(S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING),
        other => Err(refuse(other)),
    }
}

/// Which EP a `dat_cr_accept` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcceptOn {
    /// The consumer's EP (a PSP's request): it must be idle, UNCONNECTED (an EP reserved for
    /// an RSP, or pending for a request of its own, is not).
    Given,
    /// The EP the request names (an RSP's, `ep_handle` NULL): PASSIVE_CONNECTION_PENDING since
    /// its request arrived (TENTATIVE_CONNECTION_PENDING for one a provider made).
    OfTheRequest,
}

/// `dat_cr_accept` with this EP: it becomes COMPLETION_PENDING until the transport confirms.
pub fn accept(state: State, on: AcceptOn) -> DatResult<State> {
    match (on, state) {
        (AcceptOn::Given, S::DAT_EP_STATE_UNCONNECTED)
        | (
            AcceptOn::OfTheRequest,
            S::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING
            | S::DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING,
        ) => Ok(S::DAT_EP_STATE_COMPLETION_PENDING),
        (_, other) => Err(refuse(other)),
    }
}

/// A request arrived at the RSP that reserved this EP: "The Local Endpoint is transitioned
/// from Reserved to Passive Connection Pending state" (dat_rsp_create). None when the EP is
/// no longer RESERVED.
pub fn request_arrived(state: State) -> Option<State> {
    match state {
        S::DAT_EP_STATE_RESERVED => Some(S::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING),
        _ => None,
    }
}

/// The RSP's request was rejected (or handed off, or could not be delivered): "If rejected,
/// the Local Endpoint point transitions into Unconnected state" (dat_rsp_create).
pub fn request_gone(state: State) -> State {
    match state {
        S::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING => S::DAT_EP_STATE_UNCONNECTED,
        other => other,
    }
}

/// A connect that could not start (the transport refused it at once): the EP is UNCONNECTED
/// again, as it was.
pub fn connect_not_started(state: State) -> State {
    match state {
        S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING => S::DAT_EP_STATE_UNCONNECTED,
        other => other,
    }
}

/// `dat_rsp_create`: an UNCONNECTED EP is reserved for the RSP's one request.
pub fn reserve(state: State) -> DatResult<State> {
    match state {
        S::DAT_EP_STATE_UNCONNECTED => Ok(S::DAT_EP_STATE_RESERVED),
        other => Err(refuse(other)),
    }
}

/// The RSP is freed: a still RESERVED EP is UNCONNECTED again; one whose request came stays
/// where it is (the request is still a CR to accept or reject).
pub fn unreserve(state: State) -> State {
    match state {
        S::DAT_EP_STATE_RESERVED => S::DAT_EP_STATE_UNCONNECTED,
        other => other,
    }
}

/// A connection, or an attempt at one, is over, whatever the state: DISCONNECTED.
pub fn end(_state: State) -> State {
    S::DAT_EP_STATE_DISCONNECTED
}

/// The transport's verdict on a pending connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Established,
    Failed,
}

/// A pending connection settles: ESTABLISHED makes it CONNECTED; every failure (peer or
/// non-peer reject, unreachable, timeout, accept completion error) makes it DISCONNECTED.
pub fn settle(state: State, outcome: Outcome) -> Option<State> {
    match (state, outcome) {
        (
            S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING | S::DAT_EP_STATE_COMPLETION_PENDING,
            Outcome::Established,
        ) => Some(S::DAT_EP_STATE_CONNECTED),
        (
            S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING | S::DAT_EP_STATE_COMPLETION_PENDING,
            Outcome::Failed,
        ) => Some(S::DAT_EP_STATE_DISCONNECTED),
        _ => None,
    }
}

/// What `dat_ep_disconnect` does in a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disconnect {
    /// Nothing to do: the call succeeds and nothing changes (already DISCONNECTED, or a
    /// graceful disconnect already under way).
    Nothing,
    /// Close the connection once every request posted so far has completed: the EP is
    /// DISCONNECT_PENDING meanwhile.
    Graceful,
    /// Tear down the connection (or the pending attempt) at once: the EP is DISCONNECTED.
    Abrupt,
}

/// `dat_ep_disconnect`: a connected EP goes to DISCONNECT_PENDING (graceful) or straight to
/// DISCONNECTED (abrupt); a graceful one while DISCONNECT_PENDING has no effect, an abrupt one
/// ends the wait; a pending connect is abandoned whatever the flag (the page: outside
/// CONNECTED the two flags mean the same); an UNCONNECTED, RESERVED or passive-pending EP has
/// nothing to disconnect.
pub fn disconnect(state: State, graceful: bool) -> DatResult<Disconnect> {
    match state {
        S::DAT_EP_STATE_CONNECTED
        | S::DAT_EP_STATE_CONNECTED_SINGLE_PATH
        | S::DAT_EP_STATE_CONNECTED_MULTI_PATH => Ok(if graceful {
            Disconnect::Graceful
        } else {
            Disconnect::Abrupt
        }),
        S::DAT_EP_STATE_DISCONNECT_PENDING if graceful => Ok(Disconnect::Nothing),
        S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING
        | S::DAT_EP_STATE_COMPLETION_PENDING
        | S::DAT_EP_STATE_DISCONNECT_PENDING => Ok(Disconnect::Abrupt),
        S::DAT_EP_STATE_DISCONNECTED => Ok(Disconnect::Nothing),
        other => Err(refuse(other)),
    }
}

/// Whether a DTO may be posted: CONNECTED runs it, DISCONNECTED flushes it at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Post {
    Run,
    Flush,
}

/// `dat_ep_post_send`, `_rdma_write`, `_rdma_read`.
#[inline]
pub fn post_request(state: State) -> DatResult<Post> {
    match state {
        S::DAT_EP_STATE_CONNECTED
        | S::DAT_EP_STATE_CONNECTED_SINGLE_PATH
        | S::DAT_EP_STATE_CONNECTED_MULTI_PATH => Ok(Post::Run),
        S::DAT_EP_STATE_DISCONNECTED => Ok(Post::Flush),
        other => Err(refuse(other)),
    }
}

/// `dat_ep_post_recv`: receives may be posted in every state (its page lists no state error;
/// DISCONNECT_PENDING too, where the peer may still send); on a DISCONNECTED EP they are
/// flushed.
#[inline]
pub fn post_recv(state: State) -> DatResult<Post> {
    match state {
        S::DAT_EP_STATE_DISCONNECTED => Ok(Post::Flush),
        _ => Ok(Post::Run),
    }
}

/// `dat_ep_free` is legal in every state: a connection is torn down abruptly first.
/// `dat_ep_reset`: only a DISCONNECTED EP goes back to UNCONNECTED.
pub fn reset(state: State) -> DatResult<State> {
    match state {
        S::DAT_EP_STATE_DISCONNECTED => Ok(S::DAT_EP_STATE_UNCONNECTED),
        other => Err(refuse(other)),
    }
}

/// `dat_ep_modify`: only a quiescent EP (UNCONNECTED, RESERVED, or the passive states not yet
/// accepted) changes its parameters.
pub fn modify(state: State) -> DatResult {
    match state {
        S::DAT_EP_STATE_UNCONNECTED
        | S::DAT_EP_STATE_RESERVED
        | S::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING
        | S::DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING => Ok(()),
        other => Err(refuse(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [State; 15] = [
        S::DAT_EP_STATE_UNCONNECTED,
        S::DAT_EP_STATE_UNCONFIGURED_UNCONNECTED,
        S::DAT_EP_STATE_RESERVED,
        S::DAT_EP_STATE_UNCONFIGURED_RESERVED,
        S::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING,
        S::DAT_EP_STATE_UNCONFIGURED_PASSIVE,
        S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING,
        S::DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING,
        S::DAT_EP_STATE_UNCONFIGURED_TENTATIVE,
        S::DAT_EP_STATE_CONNECTED,
        S::DAT_EP_STATE_DISCONNECT_PENDING,
        S::DAT_EP_STATE_DISCONNECTED,
        S::DAT_EP_STATE_COMPLETION_PENDING,
        S::DAT_EP_STATE_CONNECTED_SINGLE_PATH,
        S::DAT_EP_STATE_CONNECTED_MULTI_PATH,
    ];

    #[test]
    fn connect_only_from_unconnected_and_errors_name_the_state() {
        assert_eq!(
            connect(S::DAT_EP_STATE_UNCONNECTED),
            Ok(S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
        );
        for s in ALL
            .into_iter()
            .filter(|s| *s != S::DAT_EP_STATE_UNCONNECTED)
        {
            assert_eq!(
                connect(s),
                Err(DatError::invalid_state(subtype(s))),
                "{s:?}"
            );
        }
        assert_eq!(
            connect(S::DAT_EP_STATE_CONNECTED),
            Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_EP_CONNECTED))
        );
    }

    #[test]
    fn a_connect_that_did_not_start_leaves_the_ep_unconnected() {
        assert_eq!(
            connect_not_started(S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING),
            S::DAT_EP_STATE_UNCONNECTED
        );
        // Settled meanwhile (an event came first): left as it is.
        assert_eq!(
            connect_not_started(S::DAT_EP_STATE_DISCONNECTED),
            S::DAT_EP_STATE_DISCONNECTED
        );
    }

    #[test]
    fn only_an_unconnected_ep_is_reserved_and_only_a_reserved_one_is_given_back() {
        assert_eq!(
            reserve(S::DAT_EP_STATE_UNCONNECTED),
            Ok(S::DAT_EP_STATE_RESERVED)
        );
        for s in ALL
            .into_iter()
            .filter(|s| *s != S::DAT_EP_STATE_UNCONNECTED)
        {
            assert_eq!(
                reserve(s),
                Err(DatError::invalid_state(subtype(s))),
                "{s:?}"
            );
        }
        assert_eq!(
            unreserve(S::DAT_EP_STATE_RESERVED),
            S::DAT_EP_STATE_UNCONNECTED
        );
        for s in ALL.into_iter().filter(|s| *s != S::DAT_EP_STATE_RESERVED) {
            assert_eq!(unreserve(s), s, "{s:?}");
        }
    }

    #[test]
    fn every_state_ends_disconnected() {
        for s in ALL {
            assert_eq!(end(s), S::DAT_EP_STATE_DISCONNECTED, "{s:?}");
        }
    }

    #[test]
    fn pending_connections_settle() {
        for pending in [
            S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING,
            S::DAT_EP_STATE_COMPLETION_PENDING,
        ] {
            assert_eq!(
                settle(pending, Outcome::Established),
                Some(S::DAT_EP_STATE_CONNECTED)
            );
            assert_eq!(
                settle(pending, Outcome::Failed),
                Some(S::DAT_EP_STATE_DISCONNECTED)
            );
        }
        // A settled or torn-down EP ignores a late verdict.
        assert_eq!(
            settle(S::DAT_EP_STATE_DISCONNECTED, Outcome::Established),
            None
        );
        assert_eq!(settle(S::DAT_EP_STATE_CONNECTED, Outcome::Failed), None);
    }

    #[test]
    fn a_given_ep_accepts_when_unconnected_and_a_reserved_one_once_its_request_came() {
        for (on, from) in [
            (AcceptOn::Given, S::DAT_EP_STATE_UNCONNECTED),
            (
                AcceptOn::OfTheRequest,
                S::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING,
            ),
            (
                AcceptOn::OfTheRequest,
                S::DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING,
            ),
        ] {
            assert_eq!(
                accept(from, on),
                Ok(S::DAT_EP_STATE_COMPLETION_PENDING),
                "{on:?} {from:?}"
            );
        }
        for on in [AcceptOn::Given, AcceptOn::OfTheRequest] {
            for s in ALL.into_iter().filter(|s| accept(*s, on).is_err()) {
                assert_eq!(
                    accept(s, on),
                    Err(DatError::invalid_state(subtype(s))),
                    "{s:?}"
                );
            }
        }
        // An EP reserved for an RSP accepts no other request, nor its own before it came.
        assert!(accept(S::DAT_EP_STATE_RESERVED, AcceptOn::Given).is_err());
        assert!(accept(S::DAT_EP_STATE_RESERVED, AcceptOn::OfTheRequest).is_err());
        assert!(accept(S::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING, AcceptOn::Given).is_err());
        assert!(accept(S::DAT_EP_STATE_UNCONNECTED, AcceptOn::OfTheRequest).is_err());
    }

    #[test]
    fn a_reserved_ep_is_passive_pending_once_its_request_comes_and_unconnected_if_it_goes() {
        assert_eq!(
            request_arrived(S::DAT_EP_STATE_RESERVED),
            Some(S::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING)
        );
        for s in ALL.into_iter().filter(|s| *s != S::DAT_EP_STATE_RESERVED) {
            assert_eq!(request_arrived(s), None, "{s:?}");
        }
        assert_eq!(
            request_gone(S::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING),
            S::DAT_EP_STATE_UNCONNECTED
        );
        // An accepted request's EP stays where the accept took it.
        assert_eq!(
            request_gone(S::DAT_EP_STATE_COMPLETION_PENDING),
            S::DAT_EP_STATE_COMPLETION_PENDING
        );
    }

    #[test]
    fn disconnect_paths() {
        assert_eq!(
            disconnect(S::DAT_EP_STATE_CONNECTED, true),
            Ok(Disconnect::Graceful)
        );
        assert_eq!(
            disconnect(S::DAT_EP_STATE_CONNECTED, false),
            Ok(Disconnect::Abrupt)
        );
        // Outside CONNECTED both flags mean the same.
        for pending in [
            S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING,
            S::DAT_EP_STATE_COMPLETION_PENDING,
        ] {
            assert_eq!(disconnect(pending, true), Ok(Disconnect::Abrupt));
            assert_eq!(disconnect(pending, false), Ok(Disconnect::Abrupt));
        }
        // DISCONNECT_PENDING: graceful again has no effect, abrupt ends the wait.
        assert_eq!(
            disconnect(S::DAT_EP_STATE_DISCONNECT_PENDING, true),
            Ok(Disconnect::Nothing)
        );
        assert_eq!(
            disconnect(S::DAT_EP_STATE_DISCONNECT_PENDING, false),
            Ok(Disconnect::Abrupt)
        );
        assert_eq!(
            disconnect(S::DAT_EP_STATE_DISCONNECTED, true),
            Ok(Disconnect::Nothing)
        );
        for s in [
            S::DAT_EP_STATE_UNCONNECTED,
            S::DAT_EP_STATE_RESERVED,
            S::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING,
            S::DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING,
        ] {
            for graceful in [true, false] {
                assert_eq!(
                    disconnect(s, graceful),
                    Err(DatError::invalid_state(subtype(s))),
                    "{s:?}"
                );
            }
        }
    }

    #[test]
    fn posting_rules() {
        assert_eq!(post_request(S::DAT_EP_STATE_CONNECTED), Ok(Post::Run));
        assert_eq!(post_request(S::DAT_EP_STATE_DISCONNECTED), Ok(Post::Flush));
        assert_eq!(
            post_request(S::DAT_EP_STATE_UNCONNECTED),
            Err(DatError::invalid_state(
                Sub::DAT_INVALID_STATE_EP_UNCONNECTED
            ))
        );
        assert_eq!(
            post_request(S::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING),
            Err(DatError::invalid_state(
                Sub::DAT_INVALID_STATE_EP_ACTCONNPENDING
            ))
        );
        assert_eq!(post_recv(S::DAT_EP_STATE_UNCONNECTED), Ok(Post::Run));
        assert_eq!(post_recv(S::DAT_EP_STATE_CONNECTED), Ok(Post::Run));
        assert_eq!(post_recv(S::DAT_EP_STATE_DISCONNECTED), Ok(Post::Flush));
        // DISCONNECT_PENDING: receives yes, requests no.
        assert_eq!(post_recv(S::DAT_EP_STATE_DISCONNECT_PENDING), Ok(Post::Run));
        assert_eq!(
            post_request(S::DAT_EP_STATE_DISCONNECT_PENDING),
            Err(DatError::invalid_state(
                Sub::DAT_INVALID_STATE_EP_DISCPENDING
            ))
        );
    }

    #[test]
    fn reset_and_modify() {
        assert_eq!(
            reset(S::DAT_EP_STATE_DISCONNECTED),
            Ok(S::DAT_EP_STATE_UNCONNECTED)
        );
        assert_eq!(
            reset(S::DAT_EP_STATE_CONNECTED),
            Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_EP_CONNECTED))
        );
        assert_eq!(modify(S::DAT_EP_STATE_UNCONNECTED), Ok(()));
        assert_eq!(
            modify(S::DAT_EP_STATE_CONNECTED),
            Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_EP_CONNECTED))
        );
    }

    #[test]
    fn every_state_has_its_own_subtype_family() {
        for s in ALL {
            let sub = subtype(s) as u32;
            assert!(sub >= Sub::DAT_INVALID_STATE_EP_UNCONNECTED as u32);
            assert!(sub <= Sub::DAT_INVALID_STATE_EP_UNCONFTENTATIVE as u32);
        }
    }
}
