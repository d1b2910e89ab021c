package routes

// The forms' side of the field tables (fields.go): what any resource's form
// shows, and the view of one control that partials/field.html draws, so
// every label, input and message of every form is written once.

import (
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// formState is what a resource's form shows: the values (the stored ones,
// or what the person typed) and the messages, read through the resource's
// field table.
type formState[T any] struct {
	fields fields[T]
	// values holds every field the form shows, as an input would.
	values T
	// Errors maps a field ("customer", "items[3][name]") to its message.
	Errors map[string]string
}

// Err returns the message for a field, or "".
func (f *formState[T]) Err(field string) string { return f.Errors[field] }

// HasErrors reports whether any field has a message.
func (f *formState[T]) HasErrors() bool { return len(f.Errors) > 0 }

// Value is the value the form shows for a field.
func (f *formState[T]) Value(name string) string {
	v, _ := f.fields.byName(name).value(&f.values)
	return v
}

// fill puts what a request sent over the form's values, so a form that is
// shown again keeps everything the person typed.
func (f *formState[T]) fill(in T) { f.fields.overlay(&f.values, &in) }

// field returns the view of field name, its control's id made of idPrefix
// and the name.
func (f *formState[T]) field(name, idPrefix string) fieldView {
	fd := f.fields.byName(name)
	v, _ := fd.value(&f.values)
	return fd.view(idPrefix+name, name, v, f.Errors[name])
}

// fieldView is one control with its label and its message: the data of
// partials/field.html.
type fieldView struct {
	control
	// ID is the control's id; its message's is ID+"-err".
	ID string
	// Name is the form key.
	Name  string
	Label string
	Value string
	// Msg is the error message as shown ("Customer is required"), or "".
	Msg string
	Max int
	// HideLabel keeps the label for screen readers only (a table cell's
	// control, whose column header shows the name).
	HideLabel bool
	// RowNumber is the number of the row a row's control belongs to, as
	// people count (0: none): the label ends with it, in an element of its
	// own that app.js renumbers when it copies a row.
	RowNumber int
	// InCell leaves out the field's box: a table cell is the box.
	InCell bool
	// Compact is a list row's inline form: the label has no "(optional)"
	// and the browser's autocomplete is left alone.
	Compact  bool
	Readonly bool
	// Autofocus gives the control the focus when its page loads: the
	// first field of a New form that has no errors (a form with errors
	// sends the focus to the first of them instead).
	Autofocus bool
	// Options are a select's choices.
	Options []option
}

// FocusedIf is v with the focus on page load when on is true.
func (v fieldView) FocusedIf(on bool) fieldView {
	v.Autofocus = on
	return v
}

// option is one choice of a select.
type option struct {
	Value, Label string
	Selected     bool
}

// view returns how f's control shows value and msg under id; key is the
// form key (a row's: items[N][field]).
func (f *field[T]) view(id, key, value, msg string) fieldView {
	v := fieldView{control: f.UI, ID: id, Name: key, Label: f.Label, Value: value, Max: f.Max}
	if msg != "" {
		v.Msg = msg
		if !f.UI.OwnSentence {
			v.Msg = f.Label + " " + msg
		}
	}
	return v
}

// recordForm is the New and Edit form, and a List row's inline form, of a
// resource whose form shows its field table and nothing more (products,
// customers): the memberForm members calls.
type recordForm[In any] struct {
	formState[In]
	R        *resource
	New      bool
	ID       int64
	Action   string
	Version  int64
	Conflict *conflictView
	// version is where In carries the version the person read.
	version func(*In) *int64
}

// newRecordForm is the form of r whose fields are fs, showing values:
// the New form when id is 0, else member id's Edit form at version.
func newRecordForm[In any](r *resource, fs fields[In], values In, id, version int64, inVersion func(*In) *int64) *recordForm[In] {
	f := &recordForm[In]{R: r, New: id == 0, ID: id, Version: version, Action: r.Path(), version: inVersion}
	f.fields, f.values = fs, values
	if id != 0 {
		f.Action = r.MemberPath(id)
	}
	return f
}

// Field is the view of a field of the New or Edit form.
func (f *recordForm[In]) Field(name string) fieldView { return f.field(name, "") }

// RowField is the view of a field of a list row's inline form.
func (f *recordForm[In]) RowField(name string) fieldView {
	v := f.field(name, "row-"+strconv.FormatInt(f.ID, 10)+"-")
	v.Compact = true
	return v
}

func (f *recordForm[In]) fill(in In) {
	f.formState.fill(in)
	if v := f.version(&in); v != nil {
		f.Version = *v
	}
}

func (f *recordForm[In]) setErrors(errs map[string]string) { f.Errors = errs }

func (f *recordForm[In]) setConflict(c *conflictView, version int64) {
	f.Conflict, f.Version = c, version
}

// prefill: such a form has no button that shows it again changed.
func (f *recordForm[In]) prefill(*fiber.Ctx) {}
