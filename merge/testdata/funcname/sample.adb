with Ada.Text_IO; use Ada.Text_IO;

package body Inventory is

   procedure Add (S : in out Store; N : Integer) is
   begin
      S.Count := S.Count + N;
      if S.Count < 0 then
         S.Count := 0;
      end if;
   end Add;

   function Total (S : Store) return Integer is
   begin
      return S.Count;
   end Total;

   package Helpers is new Generic_Helpers (Store);

   procedure Report (S : Store) is
   begin
      Put_Line ("count:");
      Put_Line (Integer'Image (S.Count));
      Put_Line ("done");
   end Report;

   task body Worker is
   begin
      loop
         delay 1.0;
         Put_Line ("tick");
      end loop;
   end Worker;

end Inventory;
