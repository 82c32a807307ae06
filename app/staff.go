package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"seckill/config"
	"seckill/repository/sqlstore"
	"seckill/service/redeem"
)

// Staff is `seckill staff add --shop N --phone P` and `seckill staff
// remove --shop N --user U`: the admin routes POST and DELETE
// /admin/shops/:shopId/staff, from the command line.
func Staff(ctx context.Context, cfg config.Config, log *slog.Logger, args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "add" && args[0] != "remove") {
		return errors.New("staff: add --shop N --phone P, or remove --shop N --user U")
	}
	verb := args[0]
	fs := flag.NewFlagSet("staff "+verb, flag.ContinueOnError)
	shop := fs.Int64("shop", 0, "shop id (required)")
	phone := fs.String("phone", "", "the staff member's phone (add)")
	user := fs.Int64("user", 0, "the staff member's user id (remove)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch {
	case *shop <= 0 || fs.NArg() > 0:
		return fmt.Errorf("staff %s: --shop must be a positive shop id (and nothing else)", verb)
	case verb == "add" && (*phone == "" || *user != 0):
		return errors.New("staff add: --phone is required (and --user is remove's)")
	case verb == "remove" && (*user <= 0 || *phone != ""):
		return errors.New("staff remove: --user must be a positive user id (and --phone is add's)")
	}
	db, err := openMigrated(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	svc := redeem.New(redeem.Deps{Codes: sqlstore.NewRedemptions(db), Staff: sqlstore.NewStaff(db), Log: log}, redeem.Config{})
	if verb == "remove" {
		removed, err := svc.RemoveStaff(ctx, *shop, *user)
		if err != nil {
			return fmt.Errorf("staff remove: %w", err)
		}
		if !removed {
			fmt.Fprintf(stdout, "user %d was not staff of shop %d: nothing changed\n", *user, *shop)
			return nil
		}
		fmt.Fprintf(stdout, "user %d is no longer staff of shop %d: its next redemption is refused (NOT_STAFF) on every instance\n", *user, *shop)
		return nil
	}
	u, err := svc.AddStaff(ctx, *shop, *phone)
	if err != nil {
		return fmt.Errorf("staff add: %w", err)
	}
	fmt.Fprintf(stdout, "user %d is staff of shop %d: it logs in by code with its phone (its token then carries the role staff) and redeems at POST /shop/%d/redeem\n",
		u.ID, *shop, *shop)
	return nil
}
