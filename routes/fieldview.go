package routes

// The forms' side of the field tables (fields.go): what any resource's form
// shows, and the view of one control that partials/field.html draws, so
// every label, input and message of every form is written once.

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
	// Options are a select's choices.
	Options []option
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
