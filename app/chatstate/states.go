// Package chatstate is chatd's core state machine (spec: "Core state
// machine"). It decides which transitions a chat may take and applies them
// over a store.Tx; stores only provide data operations. The allowed
// transitions are data (read with Transitions) so tests can enumerate them.
package chatstate

import (
	"slices"

	"github.com/chatd/chatd/store"
)

// State is an execution state of the spec's table.
type State string

// The 13 execution states, plus Invalid.
const (
	StateN       State = "N"
	StateW       State = "W"
	StateE0      State = "E0"
	StateE1      State = "E1"
	StateR0      State = "R0"
	StateR1      State = "R1"
	StateI0      State = "I0"
	StateI1      State = "I1"
	StateA0      State = "A0"
	StateA1      State = "A1"
	StateXW      State = "XW"
	StateXE0     State = "XE0"
	StateXE1     State = "XE1"
	StateInvalid State = "Invalid"
)

// AllExecutionStates lists the 13 valid execution states.
var AllExecutionStates = []State{
	StateN, StateW, StateE0, StateE1, StateR0, StateR1, StateI0, StateI1,
	StateA0, StateA1, StateXW, StateXE0, StateXE1,
}

// AllStates is AllExecutionStates plus Invalid.
var AllStates = append(append([]State(nil), AllExecutionStates...), StateInvalid)

// Archived reports whether s is one of the archived states.
func (s State) Archived() bool { return s == StateXW || s == StateXE0 || s == StateXE1 }

// Runnable reports whether a worker should process a chat in s
// (spec: "Acquisition loop").
func (s State) Runnable() bool {
	switch s {
	case StateR0, StateR1, StateI0, StateI1, StateA0, StateA1:
		return true
	}
	return false
}

// Classify derives the execution state from what is in the database.
func Classify(exists bool, status store.ChatStatus, archived, queued bool) State {
	if !exists {
		return StateN
	}
	pick := func(empty, nonEmpty State) State {
		if queued {
			return nonEmpty
		}
		return empty
	}
	if archived {
		switch status {
		case store.ChatStatusWaiting:
			if !queued {
				return StateXW
			}
		case store.ChatStatusError:
			return pick(StateXE0, StateXE1)
		}
		return StateInvalid
	}
	switch status {
	case store.ChatStatusWaiting:
		if !queued {
			return StateW
		}
	case store.ChatStatusError:
		return pick(StateE0, StateE1)
	case store.ChatStatusRunning:
		return pick(StateR0, StateR1)
	case store.ChatStatusInterrupting:
		return pick(StateI0, StateI1)
	case store.ChatStatusRequiresAction:
		return pick(StateA0, StateA1)
	}
	return StateInvalid
}

// Ownership is U (unowned) or O (owned).
type Ownership string

// Ownership states.
const (
	OwnershipU Ownership = "U"
	OwnershipO Ownership = "O"
)

// OwnershipOf classifies a chat's worker_id.
func OwnershipOf(c store.Chat) Ownership {
	if c.WorkerID.Valid {
		return OwnershipO
	}
	return OwnershipU
}

// Transition names a transition of the spec.
type Transition string

// Execution-state transitions. SendMessage is split by busy behaviour
// because the diagram allows different outputs for each. EnterReview is
// chatd's own: EnterRequiresAction without a deadline, for an operator's
// review of tool calls whose effects are unknown (durable requests).
// EnterApproval and AnswerApproval are chatd's too: requires_action without
// a deadline while a person approves or denies server-side tool calls; the
// last answer resumes running.
const (
	Create                  Transition = "Create"
	SetArchivedTrue         Transition = "SetArchived(true)"
	SetArchivedFalse        Transition = "SetArchived(false)"
	SendMessageQueue        Transition = "SendMessage(queue)"
	SendMessageInterrupt    Transition = "SendMessage(interrupt)"
	EditMessage             Transition = "EditMessage"
	DeleteQueuedMessage     Transition = "DeleteQueuedMessage"
	PromoteQueuedMessage    Transition = "PromoteQueuedMessage"
	Interrupt               Transition = "Interrupt"
	CompleteRequiresAction  Transition = "CompleteRequiresAction"
	RequestCompaction       Transition = "RequestCompaction"
	ClearContext            Transition = "ClearContext"
	CommitStep              Transition = "CommitStep"
	EnterRequiresAction     Transition = "EnterRequiresAction"
	EnterReview             Transition = "EnterReview"
	EnterApproval           Transition = "EnterApproval"
	AnswerApproval          Transition = "AnswerApproval"
	FinishInterruption      Transition = "FinishInterruption"
	RecordGenerationAttempt Transition = "RecordGenerationAttempt"
	RecordRetryState        Transition = "RecordRetryState"
	FinishTurn              Transition = "FinishTurn"
	FinishError             Transition = "FinishError"
	CancelRequiresAction    Transition = "CancelRequiresAction"
	ReconcileInvalidState   Transition = "ReconcileInvalidState"
	// SwitchBranch is chatd's own (issue 32): it makes another branch of
	// the chat's message tree the active one, only while the chat is idle.
	SwitchBranch Transition = "SwitchBranch"
)

// Ownership transitions (spec: "Ownership state transition diagram").
const (
	Acquire Transition = "Acquire"
	Abandon Transition = "Abandon"
)

func isOwnershipTransition(tr Transition) bool { return tr == Acquire || tr == Abandon }

// AllTransitions lists every execution-state transition.
var AllTransitions = []Transition{
	Create, SetArchivedTrue, SetArchivedFalse, SendMessageQueue, SendMessageInterrupt,
	EditMessage, DeleteQueuedMessage, PromoteQueuedMessage, Interrupt,
	CompleteRequiresAction, RequestCompaction, ClearContext, CommitStep,
	EnterRequiresAction, EnterReview, EnterApproval, AnswerApproval, FinishInterruption, RecordGenerationAttempt, RecordRetryState,
	FinishTurn, FinishError, CancelRequiresAction, ReconcileInvalidState, SwitchBranch,
}

// matrix is the execution state transition diagram: from-state ->
// transition -> the output states it may land in. A pair that is absent is
// not allowed. It is unexported so nothing can change it at run time;
// Transitions hands out a copy.
var matrix = map[State]map[Transition][]State{
	StateN: {
		Create: {StateR0, StateW},
	},
	StateW: {
		SendMessageQueue:     {StateR0},
		SendMessageInterrupt: {StateR0},
		EditMessage:          {StateR0},
		RequestCompaction:    {StateR0},
		ClearContext:         {StateW},
		FinishError:          {StateE0},
		SetArchivedTrue:      {StateXW},
		SwitchBranch:         {StateW},
	},
	StateE0: {
		SendMessageQueue:     {StateR0},
		SendMessageInterrupt: {StateR0},
		EditMessage:          {StateR0},
		RequestCompaction:    {StateR0},
		ClearContext:         {StateW},
		SetArchivedTrue:      {StateXE0},
		SwitchBranch:         {StateE0},
	},
	StateE1: {
		SendMessageQueue:     {StateR1},
		SendMessageInterrupt: {StateR1},
		EditMessage:          {StateR0},
		RequestCompaction:    {StateR1},
		DeleteQueuedMessage:  {StateE0, StateE1},
		PromoteQueuedMessage: {StateR0, StateR1},
		SetArchivedTrue:      {StateXE1},
		SwitchBranch:         {StateE1},
	},
	StateR0: {
		RecordGenerationAttempt: {StateR0},
		RecordRetryState:        {StateR0},
		CommitStep:              {StateR0},
		EnterRequiresAction:     {StateA0},
		EnterReview:             {StateA0},
		EnterApproval:           {StateA0},
		Interrupt:               {StateI0},
		SendMessageInterrupt:    {StateI1},
		EditMessage:             {StateR0},
		FinishTurn:              {StateW},
		FinishError:             {StateE0},
		SendMessageQueue:        {StateR1},
	},
	StateR1: {
		RecordGenerationAttempt: {StateR1},
		RecordRetryState:        {StateR1},
		CommitStep:              {StateR1},
		EnterRequiresAction:     {StateA1},
		EnterReview:             {StateA1},
		EnterApproval:           {StateA1},
		Interrupt:               {StateI1},
		SendMessageInterrupt:    {StateI1},
		EditMessage:             {StateR0},
		FinishError:             {StateE1},
		SendMessageQueue:        {StateR1},
		DeleteQueuedMessage:     {StateR0, StateR1},
		PromoteQueuedMessage:    {StateI1},
		FinishTurn:              {StateR0, StateR1},
	},
	StateI0: {
		SendMessageQueue:     {StateI1},
		SendMessageInterrupt: {StateI1},
		EditMessage:          {StateR0},
		FinishInterruption:   {StateW},
	},
	StateI1: {
		SendMessageQueue:     {StateI1},
		SendMessageInterrupt: {StateI1},
		EditMessage:          {StateR0},
		DeleteQueuedMessage:  {StateI0, StateI1},
		PromoteQueuedMessage: {StateI1},
		FinishInterruption:   {StateR0, StateR1},
	},
	StateA0: {
		AnswerApproval:         {StateA0, StateR0},
		CompleteRequiresAction: {StateR0},
		Interrupt:              {StateR0},
		CancelRequiresAction:   {StateR0},
		SendMessageQueue:       {StateA1},
		SendMessageInterrupt:   {StateR1},
		EditMessage:            {StateR0},
	},
	StateA1: {
		AnswerApproval:         {StateA1, StateR1},
		CompleteRequiresAction: {StateR1},
		Interrupt:              {StateR1},
		CancelRequiresAction:   {StateR1},
		SendMessageQueue:       {StateA1},
		SendMessageInterrupt:   {StateR1},
		EditMessage:            {StateR0},
		DeleteQueuedMessage:    {StateA0, StateA1},
		PromoteQueuedMessage:   {StateR0, StateR1},
	},
	StateXW: {
		SetArchivedFalse: {StateW},
	},
	StateXE0: {
		SetArchivedFalse: {StateE0},
	},
	StateXE1: {
		SetArchivedFalse: {StateE1},
	},
	StateInvalid: {
		ReconcileInvalidState: {StateE0, StateE1},
	},
}

// ownershipMatrix is the ownership diagram: Acquire U->O and O->O, Abandon O->U.
var ownershipMatrix = map[Ownership]map[Transition][]Ownership{
	OwnershipU: {Acquire: {OwnershipO}},
	OwnershipO: {Acquire: {OwnershipO}, Abandon: {OwnershipU}},
}

// Transitions returns a deep copy of the execution state diagram:
// from-state -> transition -> the output states it may land in. A pair
// that is absent is not allowed.
func Transitions() map[State]map[Transition][]State {
	return copyDiagram(matrix)
}

// OwnershipTransitions returns a deep copy of the ownership diagram:
// Acquire U->O and O->O, Abandon O->U.
func OwnershipTransitions() map[Ownership]map[Transition][]Ownership {
	return copyDiagram(ownershipMatrix)
}

func copyDiagram[S comparable](d map[S]map[Transition][]S) map[S]map[Transition][]S {
	out := make(map[S]map[Transition][]S, len(d))
	for from, trs := range d {
		out[from] = copyTable(trs)
	}
	return out
}

// copyTable deep-copies a from -> allowed-outputs table.
func copyTable[K comparable, V any](t map[K][]V) map[K][]V {
	out := make(map[K][]V, len(t))
	for k, vs := range t {
		out[k] = slices.Clone(vs)
	}
	return out
}

// Allowed reports whether t may be applied in state s, and a copy of its
// outputs.
func Allowed(s State, t Transition) ([]State, bool) {
	outs, ok := matrix[s][t]
	return slices.Clone(outs), ok
}
