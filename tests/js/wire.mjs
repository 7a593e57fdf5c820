// The WebSocket messages of design §9 as the node tests send them to a Conversation.
export const ws = {
  accepted: (id, text, at) => ({ type: "message_accepted", character_id: "nova", at, message_id: id, text, received_at: at }),
  state: (turn, state, ids, at = 1) => ({ type: "turn_state", character_id: "nova", at, turn_id: turn, state, message_ids: ids }),
  response: (turn, ids, text, at, origin = "reply") => ({ type: "character_response", character_id: "nova", at, turn_id: turn, message_ids: ids, text, origin, emotion: "neutral", arousal: 0.5 }),
  failed: (turn, ids, reason, at) => ({ type: "turn_failed", character_id: "nova", at, turn_id: turn, message_ids: ids, reason }),
  reset: (at) => ({ type: "session_reset", character_id: "nova", at }),
};
