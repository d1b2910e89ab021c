package routes

// What only saved views promise: a view is its maker's (others do not
// see a private one, and only its owner or an admin changes it), sharing
// takes a manager, the query is one its List accepts, and the Lists show
// their person's views with a Save view form and lead back to their last
// query. What every resource promises runs over views too, through its
// Example.

import (
	"orders/store/redisstore"
)

func init() {
	noteAdders["views"] = (*redisstore.Store).AddViewNote
	ownedRecords["views"] = true
}
